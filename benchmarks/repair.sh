#!/usr/bin/env bash
# Repair of damaged files inside one large package: FILES random files of
# SIZE bytes (default 10,000 of 100 KiB: a 1 GiB package, its central
# directory about 0.9 MB) packed stored into ONE package, served by rsdump
# serve on loopback, synced; then, RUNS times, one file (a different one
# each run) has a byte flipped and rsdump sync repairs it. For each repair
# it prints the bytes sync says it fetched, the package bytes the server
# sent (from serve's request log) and the wall time, and the median of each.
# Usage: benchmarks/repair.sh [RUNS]   (data in $BENCH_DIR, default
#   /tmp/rsdump-bench-repair; PORT, default 18610)
# Needs: go, python3, curl.
set -euo pipefail
RUNS=${1:-5}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
W=${BENCH_DIR:-/tmp/rsdump-bench-repair}
PORT=${PORT:-18610}
FILES=${FILES:-10000}
SIZE=${SIZE:-102400}
. "$ROOT/benchmarks/lib.sh"
mkdir -p "$W"
cd "$ROOT"
go build -o "$W/rsdump" ./cmd/rsdump
gen "$W/src" "$FILES" "$SIZE"
A="http://127.0.0.1:$PORT/"
if [ ! -f "$W/dump/resourcedump.xml" ]; then
  "$W/rsdump" pack "$W/src" --base-url "${A}res/" --dump-url "$A" -o "$W/dump" --quiet --compress store --max-package-size 4GiB
fi
ls -l "$W/dump"/resourcedump-*.zip
"$W/rsdump" serve "$W/dump" --addr "127.0.0.1:$PORT" --base-url "${A}res/" --dump-url "$A" 2>"$W/serve.log" &
PID=$!
trap 'kill $PID 2>/dev/null || true' EXIT
for _ in $(seq 50); do curl -sf -o /dev/null "${A}resourcedump.xml" && break; sleep 0.1; done
rm -rf "$W/dst"
"$W/rsdump" sync "${A}capabilitylist.xml" --dest "$W/dst" --quiet
# zipbytes: the package bytes serve's log says it sent so far.
zipbytes() { awk '$4 ~ /\.zip$/ {s += $6} END {print s + 0}' "$W/serve.log"; }
OUT="$W/results.tsv"
printf 'run\tfile\tfetched_bytes\tserved_zip_bytes\twall_s\n' >"$OUT"
for run in $(seq "$RUNS"); do
  f=$(find "$W/dst" -path "$W/dst/.rsdump" -prune -o -type f -print | sort | sed -n "$((run * 997 % FILES + 1))p")
  python3 -c 'import sys; p=sys.argv[1]; b=bytearray(open(p,"rb").read()); b[len(b)//2]^=0xff; open(p,"wb").write(b)' "$f"
  before=$(zipbytes)
  t0=$(date +%s.%N)
  line=$("$W/rsdump" sync --dest "$W/dst" --quiet)
  t1=$(date +%s.%N)
  fetched=$(sed -n 's/.*repaired 1 (\([0-9]*\) bytes\? fetched).*/\1/p' <<<"$line")
  served=$(( $(zipbytes) - before ))
  printf '%s\t%s\t%s\t%s\t%.2f\n' "$run" "${f#$W/dst/}" "$fetched" "$served" "$(echo "$t1 - $t0" | bc)" | tee -a "$OUT"
done
echo "medians: fetched $(cut -f3 "$OUT" | tail -n +2 | median) bytes, served $(cut -f4 "$OUT" | tail -n +2 | median) bytes, $(cut -f5 "$OUT" | tail -n +2 | median) s"
