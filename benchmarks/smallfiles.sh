#!/usr/bin/env bash
# Small files on the Destination (issue 14): a tree of FILES files of about
# 41 bytes in 100 x 100 directories (default 1,000,000, which rsdump packs
# into 20 packages of 50,000), then, side by side in one run, RUNS times
# (default 3), the order alternating run by run:
#   unzip      unzip -q -o of every package into a fresh directory (no hash
#              check, no sync)
#   unpack     rsdump unpack of the dump into a fresh directory (every
#              bitstream hashed and checked before it gets its name; data
#              and names made durable)
#   verify     rsdump verify of the dump, by this tree's build (after) and by
#              the BEFORE commit's (default 81969b9, main when issue 14 began)
#   pack       rsdump pack of the tree (after build), once per run
# Wall, CPU (user+sys) and peak RSS from GNU time; medians; ratios
# unpack/unzip and verify after/before. BEFORE_UNPACK=1 also times the
# BEFORE build's unpack (slow: minutes at a million files). The page cache
# is warm alike for every command (the packages are read once first). Each
# unzip and unpack writes into a new directory, all removed at the end
# (removing a million files takes minutes here); KEEP=1 keeps them.
# Usage: benchmarks/smallfiles.sh [RUNS]   (FILES=N; data in $BENCH_DIR,
#   default /tmp/rsdump-bench-small, about 3 x 4 KiB per file at most)
# Needs: go, git, python3, unzip, GNU time (/usr/bin/time).
set -euo pipefail
RUNS=${1:-3}
FILES=${FILES:-1000000}
BEFORE=${BEFORE:-81969b9}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
W=${BENCH_DIR:-/tmp/rsdump-bench-small}
BASE=http://127.0.0.1:1/small/ # a name only: nothing is fetched
. "$ROOT/benchmarks/lib.sh"
mkdir -p "$W/before" "$W/after"
cd "$ROOT"

if [ ! -x "$W/before/rsdump-$BEFORE" ]; then
  rm -rf "$W/before-src"; mkdir -p "$W/before-src"
  git archive "$BEFORE" | tar -x -C "$W/before-src"
  (cd "$W/before-src" && go build -o "$W/before/rsdump-$BEFORE" ./cmd/rsdump)
  rm -rf "$W/before-src"
fi
go build -o "$W/after/rsdump" ./cmd/rsdump
B="$W/before/rsdump-$BEFORE" A="$W/after/rsdump"
AFTER_REV="$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- . ':!benchmarks' || echo +dirty)"

T="$W/tree-$FILES" D="$W/dump-$FILES"
gen_small "$T" "$FILES"
if [ ! -f "$D/resourcedump.xml" ]; then
  rm -rf "$D"; "$A" pack "$T" --base-url "$BASE" -o "$D" --quiet
fi
cat "$D"/*.zip > /dev/null
cleanup() { [ "${KEEP:-0}" = 1 ] || rm -rf "$W"/dst-* "$W/out"; }
trap cleanup EXIT

# timed NAME CMD...: runs CMD, appends a row to $W/results.tsv
timed() {
  local name=$1; shift
  if ! /usr/bin/time -f '%e %U %S %M' -o "$W/time" "$@" >/dev/null 2>"$W/stderr"; then
    echo "FAILED: $*" >&2; cat "$W/stderr" >&2; exit 1
  fi
  local s u y k; read -r s u y k < "$W/time"
  printf '%s\t%s\t%s\t%.2f\t%s\t%s\n' "$RUN" "$name" "$s" "$(awk "BEGIN{print $u+$y}")" "$k" "$(cut -d' ' -f1 /proc/loadavg)" >> "$W/results.tsv"
  printf '  %-14s %7.2f s wall %7.2f s CPU %8d KB  load %s\n' "$name" "$s" "$(awk "BEGIN{print $u+$y}")" "$k" "$(cut -d' ' -f1 /proc/loadavg)"
}
unzip_all() { for z in "$D"/*.zip; do unzip -q -o "$z" -d "$1"; done; }
export -f unzip_all; export D
step() { # step NAME
  local dst="$W/dst-$1-$RUN"
  rm -rf "$dst" "$W/out"; sync
  case $1 in
    unzip) timed unzip bash -c 'unzip_all "$0"' "$dst" ;;
    unpack) timed unpack "$A" unpack --quiet "$D/resourcedump.xml" --dest "$dst" --base-url "$BASE" ;;
    unpack-before) timed unpack-before "$B" unpack --quiet "$D/resourcedump.xml" --dest "$dst" --base-url "$BASE" ;;
    verify) timed verify "$A" verify --quiet "$D/resourcedump.xml" ;;
    verify-before) timed verify-before "$B" verify --quiet "$D/resourcedump.xml" ;;
    pack) timed pack "$A" pack "$T" --base-url "$BASE" -o "$W/out" --quiet ;;
  esac
}

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(go version | cut -d' ' -f3);" \
  "before $BEFORE, after $AFTER_REV; $FILES files, $(ls "$D"/*.zip | wc -l) packages, $(du -sh --apparent-size "$D" | cut -f1) of dump;" \
  "$(date -u '+%Y-%m-%d %H:%M UTC'), load $(cut -d' ' -f1-3 /proc/loadavg)"
printf 'run\tcommand\twall\tcpu\trss_kb\tload1\n' > "$W/results.tsv"
steps=(unzip unpack verify-before verify pack)
[ "${BEFORE_UNPACK:-0}" = 1 ] && steps+=(unpack-before)
for RUN in $(seq "$RUNS"); do
  echo "run $RUN"
  order=("${steps[@]}")
  if [ $((RUN % 2)) -eq 0 ]; then order=(unpack unzip verify verify-before pack); [ "${BEFORE_UNPACK:-0}" = 1 ] && order+=(unpack-before); fi
  for s in "${order[@]}"; do step "$s"; done
done
echo "end $(date -u '+%H:%M UTC'), load $(cut -d' ' -f1-3 /proc/loadavg)"
cp "$W/results.tsv" "$W/results-$FILES-$(date -u +%Y%m%dT%H%M).tsv"

python3 - "$W/results.tsv" "$FILES" <<'PY'
import csv, statistics as st, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter='\t'))
n = int(sys.argv[2])
by = {}
for r in rows:
    by.setdefault(r['command'], []).append(r)
med = lambda c, k: st.median(float(r[k]) for r in by[c])
print('| command | wall (median) | files/s | CPU | peak RSS | runs (wall s) |')
print('| --- | --- | --- | --- | --- | --- |')
for c in by:
    print(f"| {c} | {med(c,'wall'):.2f} s | {n/med(c,'wall'):,.0f} | {med(c,'cpu'):.2f} s | {med(c,'rss_kb')/1024:.0f} MB | {' '.join(r['wall'] for r in by[c])} |")
print()
if 'unzip' in by and 'unpack' in by:
    print(f"unpack / unzip wall: {med('unpack','wall')/med('unzip','wall'):.3f} (below 1: unpack faster)")
if 'verify' in by and 'verify-before' in by:
    print(f"verify before / after wall: {med('verify-before','wall')/med('verify','wall'):.2f}x faster, CPU {med('verify-before','cpu')/med('verify','cpu'):.2f}x less")
if 'unpack-before' in by:
    print(f"unpack before / after wall: {med('unpack-before','wall')/med('unpack','wall'):.2f}x faster")
PY
