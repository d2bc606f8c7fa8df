#!/usr/bin/env bash
# rsdump sync against the other ways to copy a Source, side by side on one
# tree served on loopback, medians of RUNS runs (the three alternate, and
# which goes first rotates):
#   sync    rsdump sync http://127.0.0.1:PORT/ (discovery through the
#           Source Description; the Resource Dump's packages from two
#           rsdump serve mirrors, 127.0.0.1 and 127.0.0.2, piece-checked;
#           every bitstream verified as it is unpacked)
#   resync  resync-sync --baseline from the Resource List of the same tree
#           (resync 2.0.2 from ../shared/peers/resync-src), the resources
#           served by rsdump serve --resources
#   unpack  rsdump unpack of the same dump from local disk (the packages
#           beside OUT/resourcedump.xml): what sync is measured against,
#           the cost of the same checks and writes with no network
#   wget    wget -r of the same tree from a directory-listing server
#           (benchmarks/fileserve) plus sha256sum -c of every file against
#           the Source's sums (computed untimed beforehand)
# Data: FILES random files of SIZE bytes (default 20,000 x 107,374: 2 GiB)
# from benchmarks/lib.sh's generator. Each run starts from an empty
# destination; the page cache is dropped before each command when that is
# allowed (root), else warm. Wall and CPU (user+sys of the client and its
# children; the servers' CPU is not counted, for any of the three) come
# from GNU time.
# RTT=20ms puts every server behind benchmarks/wan, which delays every byte
# by half that in each direction, as a wide-area link between Source and
# Destination would (the servers then listen on PORT+2 and PORT+3; the
# clients and the documents name the delayed addresses). Unset or 0: plain
# loopback, no latency.
# BEFORE=BINARY adds a fourth command, "before": the same rsdump sync
# with an older rsdump binary, for a before/after comparison.
# CMDS="sync unpack" runs only those (default: all four).
# Usage: benchmarks/sync.sh [RUNS]   (FILES, SIZE, RTT, BEFORE, CMDS; data in $BENCH_DIR,
#   default /tmp/rsdump-bench-sync; PORT default 18730; DROP_CACHES=0 to
#   keep the cache warm)
# Needs: go, python3 with resync's modules (.ci/run), wget, sha256sum,
# GNU time (/usr/bin/time).
set -euo pipefail
RUNS=${1:-3}
FILES=${FILES:-20000}
SIZE=${SIZE:-107374}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
W=${BENCH_DIR:-/tmp/rsdump-bench-sync}
PORT=${PORT:-18730}
PEER=${PEER:-$ROOT/../shared/peers/resync-src}
. "$ROOT/benchmarks/lib.sh"
mkdir -p "$W"
cd "$ROOT"
go build -o "$W/rsdump" ./cmd/rsdump
go build -o "$W/fileserve" ./benchmarks/fileserve
go build -o "$W/wan" ./benchmarks/wan
REV="$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- . ':!benchmarks' || echo +dirty)"

TREE="$W/tree-$FILES-$SIZE"
gen "$TREE" "$FILES" "$SIZE"
A="127.0.0.1:$PORT" B="127.0.0.2:$PORT" F="127.0.0.1:$((PORT + 1))"
RTT=${RTT:-0}
# Where the servers listen: the addresses above, or behind the WAN proxy.
if [ "$RTT" = 0 ]; then SA_="$A" SB_="$B" SF_="$F"
else SA_="127.0.0.1:$((PORT + 2))" SB_="127.0.0.2:$((PORT + 2))" SF_="127.0.0.1:$((PORT + 3))"; fi
if [ ! -f "$W/out-$FILES-$SIZE-$PORT/resourcedump.xml" ]; then
  rm -rf "$W/out-$FILES-$SIZE-$PORT"
  "$W/rsdump" pack "$TREE" -o "$W/out-$FILES-$SIZE-$PORT" --quiet --compress store --hash sha-256 \
    --base-url "http://$A/res/" --dump-url "http://$A/dump/" --source-description \
    --metalink --mirror "http://$A/dump/" --mirror "http://$B/dump/"
fi
OUT="$W/out-$FILES-$SIZE-$PORT"
# The sums must be of this tree: a tree generated again has new bytes.
[ "$W/sums-$FILES-$SIZE" -nt "$TREE" ] || (cd "$TREE" && find . -type f -print0 | sort -z | xargs -0 sha256sum) > "$W/sums-$FILES-$SIZE"

"$W/rsdump" serve "$OUT" -q --addr "$SA_" --base-url "http://$A/res/" --dump-url "http://$A/dump/" \
  --resources "$TREE" --mirror "http://$B/dump/" &
SA=$!
"$W/rsdump" serve "$OUT" -q --addr "$SB_" --base-url "http://$B/res/" --dump-url "http://$B/dump/" --mirror "http://$A/dump/" &
SB=$!
"$W/fileserve" -dir "$TREE" -addr "$SF_" &
SF=$!
SW=
if [ "$RTT" != 0 ]; then
  "$W/wan" -rtt "$RTT" -map "$A=$SA_,$B=$SB_,$F=$SF_" &
  SW=$!
fi
trap 'kill $SA $SB $SF $SW 2>/dev/null; rm -rf "$W/dst" "$W/work" "$W/trash"' EXIT
sleep 0.5
for p in $SA $SB $SF $SW; do kill -0 "$p" || { echo "a server did not start" >&2; exit 1; }; done

DROP=${DROP_CACHES:-1}
if [ "$DROP" = 1 ] && { sync; echo 3 > /proc/sys/vm/drop_caches; } 2>/dev/null; then CACHE=cold; else DROP=0; CACHE=warm; fi

# The wget pipeline: fetch the tree (directory listings followed), drop
# the listings, check every file against the Source's sums.
cat > "$W/wget.sh" <<EOF
set -e
cd "$W/dst"
wget -q -r -np -nH "http://$F/"
find . -name 'index.html*' -delete
sha256sum --quiet -c "$W/sums-$FILES-$SIZE"
EOF

# cmd NAME: the command line to time, after making a fresh destination.
cmd() {
  fresh "$W"
  case $1 in
    sync) echo "$W/rsdump sync http://$A/ --dest $W/dst -q" ;;
    before) echo "$BEFORE sync http://$A/ --dest $W/dst -q" ;;
    unpack) echo "$W/rsdump unpack $OUT/resourcedump.xml --base-url http://$A/res/ --dest $W/dst -q" ;;
    resync) echo "env PYTHONPATH=$PEER /usr/bin/python3 $PEER/resync-sync --baseline --sitemap http://$A/dump/resourcelist.xml http://$A/res/=$W/dst" ;;
    wget) echo "sh $W/wget.sh" ;;
  esac
}
# check NAME: the destination must be the tree, byte for byte.
check() {
  if ! diff -r -q -x .rsdump "$TREE" "$W/dst" >/dev/null; then
    echo "FAILED: $1 left a tree that differs from the Source" >&2; diff -r -q -x .rsdump "$TREE" "$W/dst" | head >&2; exit 1
  fi
}
timed() {
  local line; line=$(cmd "$1")
  sync; [ "$DROP" = 1 ] && echo 3 > /proc/sys/vm/drop_caches
  # shellcheck disable=SC2086
  if ! (cd "$W/work" && /usr/bin/time -f '%e %U %S %M' -o "$W/time" $line >/dev/null 2>"$W/stderr"); then
    echo "FAILED: $line" >&2; tail -20 "$W/stderr" >&2; exit 1
  fi
  check "$1"
  local s u y k; read -r s u y k < "$W/time"
  printf '%s\t%s\t%s\t%.2f\t%s\t%s\n' "$RUN" "$1" "$s" "$(awk "BEGIN{print $u+$y}")" "$k" "$(cut -d' ' -f1 /proc/loadavg)" >> "$W/results.tsv"
  printf '  %-7s %8.2f s wall %8.2f s CPU %8d KB\n' "$1" "$s" "$(awk "BEGIN{print $u+$y}")" "$k"
}

echo "machine: $(nproc) cores, $(go version | cut -d' ' -f3); rsdump $REV;" \
  "data: $FILES files x $SIZE B ($(du -sh --apparent-size "$TREE" | cut -f1)); $CACHE page cache; RTT $RTT;" \
  "$(date -u '+%Y-%m-%d %H:%M UTC'), load $(cut -d' ' -f1-3 /proc/loadavg)"
printf 'run\tcommand\twall\tcpu\trss_kb\tload1\n' > "$W/results.tsv"
CMDS=(${CMDS:-sync unpack resync wget})
[ -n "${BEFORE:-}" ] && CMDS+=(before)
rounds "$RUNS" "${CMDS[@]}"
echo "end $(date -u '+%H:%M UTC'), load $(cut -d' ' -f1-3 /proc/loadavg)"
cp "$W/results.tsv" "$W/results-$FILES-rtt$RTT-$(date -u +%Y%m%dT%H%M).tsv"

python3 - "$W/results.tsv" <<'PY'
import csv, statistics as st, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter='\t'))
med = {c: (st.median(float(r['wall']) for r in rows if r['command'] == c),
           st.median(float(r['cpu']) for r in rows if r['command'] == c),
           st.median(int(r['rss_kb']) for r in rows if r['command'] == c)) for c in ('sync', 'unpack', 'resync', 'wget', 'before') if any(r['command'] == c for r in rows)}
print('| command | wall (median) | CPU (median) | peak RSS | wall ratio to sync | CPU ratio to sync |')
print('|---|---|---|---|---|---|')
for c, (w, u, k) in med.items():
    print(f'| {c} | {w:.2f} s | {u:.2f} s | {k/1024:.0f} MiB | {w/med["sync"][0]:.1f}x | {u/med["sync"][1]:.1f}x |')
PY
