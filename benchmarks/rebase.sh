#!/usr/bin/env bash
# A re-base (issue 38): the Source packs a full Resource Dump again (no
# --changes) after a month of work changed 1% of its bytes, and a
# Destination that holds the last dump is brought to the new one. Side by
# side on one tree served on loopback, medians of RUNS runs (the commands
# alternate, and which goes first rotates):
#   rebase  rsdump sync --dest D, D a copy of the destination rsdump sync
#           made from the first dump (its files hard links, its .rsdump
#           copied): planned from the new dump's detached manifests and
#           the written log, only the bitstreams that differ fetched, from
#           inside the packages by byte ranges, the files gone removed
#   resync  resync-sync --baseline --delete from the new Resource List
#           (resync 2.0.2, ../shared/peers/resync-src) into a copy of the
#           same tree without .rsdump (a real copy: resync rewrites a
#           file in place, which would reach D1 through a link): resync compares each file's length
#           and mtime with the list's (it hashes nothing without --hash)
#           and fetches what differs, resource by resource, from rsdump
#           serve --resources
#   full    rsdump sync of the new dump into an empty destination: what a
#           Destination without the re-base would fetch (the whole dump)
# Bytes fetched are counted at the server: the body bytes of every
# request rsdump serve logs while the command runs (documents, manifests,
# package ranges, resources).
# Data: FILES random files of SIZE bytes (default 10,000 x 107,374: 1 GiB)
# from benchmarks/lib.sh's generator, then CHANGED of them rewritten, NEW
# added and GONE deleted (default 80, 10, 10: 1% of the bytes written,
# 0.1% of the files deleted). The page cache is dropped before each
# command when that is allowed (root), else warm. Wall and CPU (user+sys
# of the client and its children; the server's is not counted) come from
# GNU time.
# Usage: benchmarks/rebase.sh [RUNS]   (FILES, SIZE, CHANGED, NEW, GONE; data in
#   $BENCH_DIR, default /tmp/rsdump-bench-rebase; PORT default 18760;
#   DROP_CACHES=0 to keep the cache warm; CMDS="rebase resync" runs only those)
# Needs: go, python3 with resync's modules (.ci/run), GNU time (/usr/bin/time).
set -euo pipefail
RUNS=${1:-3}
FILES=${FILES:-10000}
SIZE=${SIZE:-107374}
CHANGED=${CHANGED:-80}
NEW=${NEW:-10}
GONE=${GONE:-10}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
W=${BENCH_DIR:-/tmp/rsdump-bench-rebase}
PORT=${PORT:-18760}
PEER=${PEER:-$ROOT/../shared/peers/resync-src}
. "$ROOT/benchmarks/lib.sh"
mkdir -p "$W"
cd "$ROOT"
go build -o "$W/rsdump" ./cmd/rsdump
REV="$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- . ':!benchmarks' || echo +dirty)"
A="127.0.0.1:$PORT"

# The Source before (TREE) and after (TREE2: TREE's files linked, those
# changed written anew, so that TREE stays as it was).
TREE="$W/tree-$FILES-$SIZE"
gen "$TREE" "$FILES" "$SIZE"
TREE2="$W/tree2-$FILES-$SIZE-$CHANGED-$NEW-$GONE"
if [ ! -d "$TREE2" ]; then
  rm -rf "$TREE2.tmp"; cp -al "$TREE" "$TREE2.tmp"
  python3 - "$TREE2.tmp" "$FILES" "$SIZE" "$CHANGED" "$NEW" "$GONE" <<'PY'
import os, random, sys
d, n, size, changed, new, gone = sys.argv[1], *map(int, sys.argv[2:])
rng = random.Random(38)
picks = rng.sample(range(n), changed + gone)
name = lambda i: os.path.join(d, 'd%04d' % (i // 128), 'f%06d.bin' % i)
for i in picks[:changed]:
    os.remove(name(i))  # a new inode: TREE keeps its file
    with open(name(i), 'wb') as f:
        f.write(os.urandom(size))
for i in picks[changed:]:
    os.remove(name(i))
os.makedirs(os.path.join(d, 'new'), exist_ok=True)
for i in range(new):
    with open(os.path.join(d, 'new', 'n%04d.bin' % i), 'wb') as f:
        f.write(os.urandom(size))
PY
  mv "$TREE2.tmp" "$TREE2"
fi
pack() { # pack TREE OUT
  [ -f "$2/resourcedump.xml" ] && return
  rm -rf "$2"
  "$W/rsdump" pack "$1" -o "$2" --quiet --compress store --hash sha-256 \
    --base-url "http://$A/res/" --dump-url "http://$A/dump/" --source-description
}
OUT="$W/out-$FILES-$SIZE-$PORT"
OUT2="$W/out2-$FILES-$SIZE-$CHANGED-$NEW-$GONE-$PORT"
pack "$TREE" "$OUT"
[ "$OUT2/resourcedump.xml" -nt "$OUT/resourcedump.xml" ] || { rm -rf "$OUT2"; sleep 1; pack "$TREE2" "$OUT2"; }
DUMP=$(python3 -c 'import re,sys; print(sum(int(x) for x in re.findall(r"length=\"(\d+)\"", open(sys.argv[1]).read())))' "$OUT2/resourcedump.xml")

SRV=
trap 'kill $SRV 2>/dev/null; rm -rf "$W/dst" "$W/work" "$W/trash"' EXIT
serve() { # serve OUT TREE: rsdump serve at A, logging every request to $W/serve.log
  [ -n "$SRV" ] && { kill "$SRV"; wait "$SRV" 2>/dev/null || true; }
  "$W/rsdump" serve "$1" --addr "$A" --base-url "http://$A/res/" --dump-url "http://$A/dump/" --resources "$2" 2>>"$W/serve.log" &
  SRV=$!
  sleep 0.5; kill -0 "$SRV" || { echo "the server did not start" >&2; exit 1; }
}

# The Destination of the first dump, synced once (untimed).
D1="$W/synced-$FILES-$SIZE-$PORT"
if [ ! -f "$D1/.rsdump/state.json" ] || [ "$OUT/resourcedump.xml" -nt "$D1/.rsdump/state.json" ]; then
  rm -rf "$D1"
  serve "$OUT" "$TREE"
  "$W/rsdump" sync "http://$A/" --dest "$D1" -q
fi
serve "$OUT2" "$TREE2"

DROP=${DROP_CACHES:-1}
if [ "$DROP" = 1 ] && { sync; echo 3 > /proc/sys/vm/drop_caches; } 2>/dev/null; then CACHE=cold; else DROP=0; CACHE=warm; fi

# cmd NAME: the command line to time, after making its destination.
cmd() {
  fresh "$W"
  case $1 in
    rebase)
      cp -al "$D1/." "$W/dst/"
      rm -rf "$W/dst/.rsdump"; cp -a "$D1/.rsdump" "$W/dst/.rsdump" # appended to: not shared
      echo "$W/rsdump sync --dest $W/dst -q" ;;
    resync) # a copy: resync writes a changed file in place, which would change D1's through a link
      cp -a "$D1/." "$W/dst/"; rm -rf "$W/dst/.rsdump"
      echo "env PYTHONPATH=$PEER /usr/bin/python3 $PEER/resync-sync --baseline --delete --sitemap http://$A/dump/resourcelist.xml http://$A/res/=$W/dst" ;;
    full) echo "$W/rsdump sync http://$A/ --dest $W/dst -q" ;;
  esac
}
# check NAME: the destination must be the new tree, byte for byte.
check() {
  if ! diff -r -q -x .rsdump "$TREE2" "$W/dst" >/dev/null; then
    echo "FAILED: $1 left a tree that differs from the Source" >&2; diff -r -q -x .rsdump "$TREE2" "$W/dst" | head >&2; exit 1
  fi
}
# served: the body bytes and the requests rsdump serve logged since the
# log was emptied (the sixth field of its lines is the bytes).
served() { sleep 0.3; awk '{b += $6; n++} END {printf "%d %d\n", b, n}' "$W/serve.log"; }
timed() {
  local line; line=$(cmd "$1")
  sync; [ "$DROP" = 1 ] && echo 3 > /proc/sys/vm/drop_caches
  : > "$W/serve.log"
  # shellcheck disable=SC2086
  if ! (cd "$W/work" && /usr/bin/time -f '%e %U %S %M' -o "$W/time" $line >/dev/null 2>"$W/stderr"); then
    echo "FAILED: $line" >&2; tail -20 "$W/stderr" >&2; exit 1
  fi
  local b n; read -r b n < <(served)
  check "$1"
  local s u y k; read -r s u y k < "$W/time"
  printf '%s\t%s\t%s\t%.2f\t%s\t%s\t%s\t%s\n' "$RUN" "$1" "$s" "$(awk "BEGIN{print $u+$y}")" "$k" "$b" "$n" "$(cut -d' ' -f1 /proc/loadavg)" >> "$W/results.tsv"
  printf '  %-7s %8.2f s wall %8.2f s CPU %8d KB %12d bytes served in %d requests\n' "$1" "$s" "$(awk "BEGIN{print $u+$y}")" "$k" "$b" "$n"
}

echo "machine: $(nproc) cores, $(go version | cut -d' ' -f3); rsdump $REV;" \
  "data: $FILES files x $SIZE B ($(du -sh --apparent-size "$TREE" | cut -f1)), then $CHANGED changed, $NEW new, $GONE deleted; dump $DUMP B;" \
  "$CACHE page cache; $(date -u '+%Y-%m-%d %H:%M UTC'), load $(cut -d' ' -f1-3 /proc/loadavg)"
printf 'run\tcommand\twall\tcpu\trss_kb\tserved\trequests\tload1\n' > "$W/results.tsv"
CMDS=(${CMDS:-rebase resync full})
rounds "$RUNS" "${CMDS[@]}"
echo "end $(date -u '+%H:%M UTC'), load $(cut -d' ' -f1-3 /proc/loadavg)"
cp "$W/results.tsv" "$W/results-$FILES-$(date -u +%Y%m%dT%H%M).tsv"

python3 - "$W/results.tsv" "$DUMP" <<'PY'
import csv, statistics as st, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter='\t'))
dump = int(sys.argv[2])
cmds = [c for c in ('rebase', 'resync', 'full') if any(r['command'] == c for r in rows)]
med = {c: {k: st.median(float(r[k]) for r in rows if r['command'] == c) for k in ('wall', 'cpu', 'rss_kb', 'served', 'requests')} for c in cmds}
ref = med[cmds[0]]
print(f'| command | wall (median) | CPU (median) | peak RSS | bytes served (median) | of the dump | requests | wall ratio to {cmds[0]} |')
print('|---|---|---|---|---|---|---|---|')
for c in cmds:
    m = med[c]
    print(f"| {c} | {m['wall']:.2f} s | {m['cpu']:.2f} s | {m['rss_kb']/1024:.0f} MiB | {m['served']/1e6:.1f} MB | {100*m['served']/dump:.2f}% | {m['requests']:.0f} | {m['wall']/ref['wall']:.1f}x |")
PY
