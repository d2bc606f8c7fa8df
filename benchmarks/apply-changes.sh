#!/usr/bin/env bash
# Applying a Change Dump: rsdump unpack against resync-sync --incremental,
# the same changes, side by side, medians of RUNS runs.
#
# The Source: FILES random files of SIZE bytes (default 100,000 x 4 KiB,
# benchmarks/lib.sh's generator), packed in full at AT0; a Destination is
# restored from that Resource Dump (untimed). Then 1% of the files change
# (60% of them updated, 20% deleted, and as many created as deleted, under
# new/), and `rsdump pack --changes` writes the Change Dump and
# changelist.xml (untimed). benchmarks/fileserve serves the Source tree and
# the pack output on 127.0.0.1. Each run restores both Destinations to the
# baseline (untimed: only the paths the changes touch, and DIR/.rsdump),
# then times:
#   rsdump-http   rsdump unpack http://127.0.0.1:PORT/out/changedump.xml:
#                 the change packages over loopback, verified, applied
#   rsdump-local  rsdump unpack of the local changedump.xml
#   resync        resync-sync --incremental --changelist-uri .../changelist.xml
#                 --from AT0 --delete --spec-version 1.0: every created or
#                 updated resource fetched from the Source tree by its URI
# resync's Destination starts as a copy of rsdump's baseline (a resync
# --baseline of 100,000 resources over HTTP would take far longer than the
# runs themselves, and --from gives the point the changes start from).
# After the first run both Destinations are compared with the Source.
# Every command runs with a cold page cache when allowed (root), else warm.
# Usage: benchmarks/apply-changes.sh [RUNS]   (data in $BENCH_DIR, default
#   /tmp/rsdump-bench-chg, about 1 GB at the defaults; PORT default 18491;
#   PEER, resync's source, default ../shared/peers/resync-src)
# Needs: go, python3 with resync's modules (RUNNING.md), GNU time.
set -euo pipefail
RUNS=${1:-5}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
W=${BENCH_DIR:-/tmp/rsdump-bench-chg}
PORT=${PORT:-18491}
FILES=${FILES:-100000}
SIZE=${SIZE:-4096}
PEER=${PEER:-$(cd "$ROOT/../shared/peers/resync-src" && pwd)}
. "$ROOT/benchmarks/lib.sh"
mkdir -p "$W"
cd "$ROOT"
go build -o "$W/rsdump" ./cmd/rsdump
go build -o "$W/fileserve" ./benchmarks/fileserve
REV="$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- . ':!benchmarks' || echo +dirty)"
URL="http://127.0.0.1:$PORT"
BASE="$URL/src/"

gen "$W/data" "$FILES" "$SIZE"
rm -rf "$W/srv" "$W/base" "$W/dst-rsdump" "$W/dst-resync" "$W/rsw"
mkdir -p "$W/srv" "$W/rsw"
cp -a "$W/data" "$W/srv/src"
AT0=$(python3 -c 'import datetime as d; print((d.datetime.now(d.timezone.utc).replace(microsecond=0)+d.timedelta(seconds=2)).strftime("%Y-%m-%dT%H:%M:%SZ"))')
AT1=$(python3 -c "import datetime as d; print((d.datetime.strptime('$AT0','%Y-%m-%dT%H:%M:%SZ')+d.timedelta(minutes=2)).strftime('%Y-%m-%dT%H:%M:%SZ'))")
sleep 3 # the files' mtimes before AT0
"$W/rsdump" pack "$W/srv/src" --base-url "$BASE" --dump-url "$URL/out/" -o "$W/srv/out" --at "$AT0" --compress store -q
"$W/rsdump" unpack "$W/srv/out/resourcedump.xml" --dest "$W/base" --base-url "$BASE" -q

# The changes, listed in $W/changes.tsv (kind, path), with mtimes a minute after AT0.
python3 - "$W/srv/src" "$W/changes.tsv" "$AT0" <<'PY'
import datetime, os, sys
src, listing, at0 = sys.argv[1], sys.argv[2], sys.argv[3]
t = datetime.datetime.strptime(at0, '%Y-%m-%dT%H:%M:%SZ').replace(tzinfo=datetime.timezone.utc).timestamp() + 60
files = sorted(os.path.relpath(os.path.join(d, f), src) for d, _, fs in os.walk(src) for f in fs)
picked = files[::100]
out = []
for i, rel in enumerate(picked):
    p = os.path.join(src, rel)
    if i % 5 == 3:
        os.remove(p); out.append(('deleted', rel))
        new = os.path.join('new', 'n%06d.bin' % i)
        os.makedirs(os.path.join(src, 'new'), exist_ok=True)
        with open(os.path.join(src, new), 'wb') as f:
            f.write(os.urandom(os.path.getsize(os.path.join(src, files[0]))))
        os.utime(os.path.join(src, new), (t, t)); out.append(('created', new))
    else:
        with open(p, 'r+b') as f:
            f.write(os.urandom(64))
        os.utime(p, (t, t)); out.append(('updated', rel))
with open(listing, 'w') as f:
    for k, rel in out:
        f.write(k + '\t' + rel + '\n')
PY
"$W/rsdump" pack --changes "$W/srv/src" --base-url "$BASE" --dump-url "$URL/out/" -o "$W/srv/out" --at "$AT1" -q
cp -a "$W/base" "$W/dst-rsdump"
cp -a "$W/base" "$W/dst-resync"
rm -rf "$W/dst-resync/.rsdump"

"$W/fileserve" -dir "$W/srv" -addr "127.0.0.1:$PORT" &
SRV=$!
trap 'kill "$SRV" 2>/dev/null' EXIT
sleep 0.3; kill -0 "$SRV"

# restore DIR: the paths the changes touch back to the baseline, and rsdump's state.
restore() {
  python3 - "$W/base" "$1" "$W/changes.tsv" <<'PY'
import os, shutil, sys
base, dst, listing = sys.argv[1:]
for line in open(listing):
    kind, rel = line.rstrip('\n').split('\t')
    p = os.path.join(dst, rel)
    if kind == 'created':
        if os.path.exists(p):
            os.remove(p)
    else:
        shutil.copy2(os.path.join(base, rel), p)
shutil.rmtree(os.path.join(dst, 'new'), ignore_errors=True)
if os.path.isdir(os.path.join(dst, '.rsdump')):  # rsdump's Destination: its state back to the baseline's
    shutil.rmtree(os.path.join(dst, '.rsdump'), ignore_errors=True)
    shutil.copytree(os.path.join(base, '.rsdump'), os.path.join(dst, '.rsdump'))
PY
}

# same DIR: DIR holds exactly the Source's files, byte for byte.
same() {
  python3 - "$W/srv/src" "$1" <<'PY'
import filecmp, os, sys
src, dst = sys.argv[1:]
def files(d):
    out = set()
    for r, ds, fs in os.walk(d):
        ds[:] = [x for x in ds if x != '.rsdump']
        out |= {os.path.relpath(os.path.join(r, f), d) for f in fs}
    return out
a, b = files(src), files(dst)
bad = [f for f in a & b if not filecmp.cmp(os.path.join(src, f), os.path.join(dst, f), shallow=False)]
if a != b or bad:
    sys.exit('%s differs from the Source: %d missing, %d extra, %d different' % (dst, len(a - b), len(b - a), len(bad)))
print('  %s equals the Source (%d files)' % (dst, len(a)))
PY
}

DROP=${DROP_CACHES:-1}
if [ "$DROP" = 1 ] && { sync; echo 3 > /proc/sys/vm/drop_caches; } 2>/dev/null; then CACHE=cold; else DROP=0; CACHE=warm; fi

cmd() {
  case $1 in
    rsdump-http) echo "$W/rsdump unpack -q $URL/out/changedump.xml --dest $W/dst-rsdump --base-url $BASE" ;;
    rsdump-local) echo "$W/rsdump unpack -q $W/srv/out/changedump.xml --dest $W/dst-rsdump --base-url $BASE" ;;
    resync) echo "/usr/bin/python3 $PEER/resync-sync --incremental --changelist-uri $URL/out/changelist.xml --from $AT0 --delete --spec-version 1.0 $BASE=$W/dst-resync" ;;
  esac
}
dst() { case $1 in resync) echo "$W/dst-resync" ;; *) echo "$W/dst-rsdump" ;; esac; }
timed() {
  local line; line=$(cmd "$1")
  restore "$(dst "$1")"
  sync; [ "$DROP" = 1 ] && echo 3 > /proc/sys/vm/drop_caches
  # shellcheck disable=SC2086
  if ! (cd "$W/rsw" && PYTHONPATH=$PEER /usr/bin/time -f '%e %U %S %M' -o "$W/time" $line >/dev/null 2>"$W/stderr"); then
    echo "FAILED: $line" >&2; tail -20 "$W/stderr" >&2; exit 1
  fi
  local s u y k; read -r s u y k < "$W/time"
  printf '%s\t%s\t%s\t%.2f\t%s\t%s\n' "$RUN" "$1" "$s" "$(awk "BEGIN{print $u+$y}")" "$k" "$(cut -d' ' -f1 /proc/loadavg)" >> "$W/results.tsv"
  printf '  %-13s %7.2f s wall %7.2f s CPU %8d KB\n' "$1" "$s" "$(awk "BEGIN{print $u+$y}")" "$k"
}

echo "machine: $(nproc) cores, $(go version | cut -d' ' -f3); rsdump $REV; data: $FILES x $SIZE B," \
  "$(wc -l < "$W/changes.tsv") changes ($(cut -f1 "$W/changes.tsv" | sort | uniq -c | xargs));" \
  "$CACHE page cache; $(date -u '+%Y-%m-%d %H:%M UTC'), load $(cut -d' ' -f1-3 /proc/loadavg)"
printf 'run\tcommand\twall\tcpu\trss_kb\tload1\n' > "$W/results.tsv"
for RUN in $(seq "$RUNS"); do
  if [ $((RUN % 2)) -eq 1 ]; then order=(rsdump-http rsdump-local resync); else order=(resync rsdump-local rsdump-http); fi
  echo "run $RUN (${order[0]} first), load $(cut -d' ' -f1-3 /proc/loadavg)"
  for c in "${order[@]}"; do timed "$c"; done
  if [ "$RUN" = 1 ]; then same "$W/dst-rsdump"; same "$W/dst-resync"; fi
done
echo "end $(date -u '+%H:%M UTC'), load $(cut -d' ' -f1-3 /proc/loadavg)"
cp "$W/results.tsv" "$W/results-$(date -u +%Y%m%dT%H%M).tsv"

python3 - "$W/results.tsv" <<'PY'
import csv, statistics as st, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter='\t'))
med = {}
for c in ('rsdump-http', 'rsdump-local', 'resync'):
    rs = [r for r in rows if r['command'] == c]
    med[c] = (st.median(float(r['wall']) for r in rs), st.median(float(r['cpu']) for r in rs), st.median(int(r['rss_kb']) for r in rs))
print('| command | wall (median) | CPU (median) | peak RSS | resync / this (wall) |')
print('|---|---|---|---|---|')
for c, (w, u, k) in med.items():
    print('| %s | %.2f s | %.2f s | %d MB | %.1fx |' % (c, w, u, k // 1024, med['resync'][0] / w))
PY
