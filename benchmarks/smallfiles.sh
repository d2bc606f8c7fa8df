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
#   unzip-cd   unzip -q -o of every package of a Change Dump that creates
#              the same files (pack --changes of the tree over an empty
#              baseline)
#   unpack-cd  rsdump unpack of that Change Dump, into a tree holding its
#              (empty) baseline
#   get-unpack rsdump get --unpack of the Resource Dump from a loopback
#              server (benchmarks/fileserve), download included
# Wall, CPU (user+sys) and peak RSS from GNU time; medians; ratios
# unpack/unzip and verify after/before. STEPS="unzip unpack ..." runs only
# those steps.
#
# FRESH_FS=1 (root, Linux) writes every unzip and unpack into a new ext4
# file system of its own, made on a loop device with direct I/O over a
# sparse file in $W, mounted at $W/mnt: each command then starts from the
# same empty file system. Without it, the kernel's cost of creating a
# file depends on what the disk went through before: on an ext4 without a
# journal, ext4_new_inode checks every free inode near its goal for a
# recent deletion (recently_deleted), and after a few million files were
# removed unzip's system time for 100,000 files varied from 3 to 45 s. BEFORE_UNPACK=1 also times the
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
# The Change Dump: the same files created over an empty baseline (hard
# links to the tree, so the same content and mtimes).
CD="$W/cd-$FILES"
if [ ! -f "$CD/out/changedump.xml" ]; then
  rm -rf "$CD"; mkdir -p "$CD/src"
  "$A" pack "$CD/src" --base-url "$BASE" -o "$CD/out" --quiet
  cp -al "$T/." "$CD/src/"
  "$A" pack --changes "$CD/src" --base-url "$BASE" -o "$CD/out" --quiet
fi
cat "$CD"/out/*.zip > /dev/null
# get --unpack: the dump served on loopback, its packages at that address.
go build -o "$W/fileserve" ./benchmarks/fileserve
PORT=${PORT:-18491}
rm -rf "$W/serve"; mkdir -p "$W/serve"
ln -s "$D"/*.zip "$D"/*.manifest.xml "$W/serve/"
sed "s#$BASE#http://127.0.0.1:$PORT/#g" "$D/resourcedump.xml" > "$W/serve/resourcedump.xml"
"$W/fileserve" -dir "$W/serve" -addr "127.0.0.1:$PORT" >/dev/null 2>&1 &
SERVER=$!

MNT="$W/mnt"
fresh_fs() { # a new ext4 at $MNT, over the image $W/fs.img
  umount "$MNT" 2>/dev/null || true
  [ -n "${LOOP:-}" ] && losetup -d "$LOOP" 2>/dev/null || true
  rm -f "$W/fs.img"; truncate -s 40G "$W/fs.img"
  mkfs.ext4 -q -F "$W/fs.img"
  LOOP=$(losetup --direct-io=on -f --show "$W/fs.img")
  mkdir -p "$MNT"; mount "$LOOP" "$MNT"
}
cleanup() {
  kill "$SERVER" 2>/dev/null || true
  if [ "${FRESH_FS:-0}" = 1 ]; then umount "$MNT" 2>/dev/null || true; [ -n "${LOOP:-}" ] && losetup -d "$LOOP"; rm -f "$W/fs.img"; fi
  [ "${KEEP:-0}" = 1 ] || rm -rf "$W"/dst-* "$W/out"
}
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
unzip_all() { for z in "$1"/*.zip; do unzip -q -o "$z" -d "$2"; done; }
export -f unzip_all; export D
step() { # step NAME
  local dst="$W/dst-$1-$RUN"
  if [ "${FRESH_FS:-0}" = 1 ]; then
    case $1 in unzip*|unpack*|get*) fresh_fs; dst="$MNT/dst" ;; esac
  fi
  rm -rf "$dst" "$W/out"; sync
  case $1 in
    unzip) timed unzip bash -c 'unzip_all "$0" "$1"' "$D" "$dst" ;;
    unzip-cd) timed unzip-cd bash -c 'unzip_all "$0" "$1"' "$CD/out" "$dst" ;;
    unpack-cd)
      "$A" unpack --quiet "$CD/out/resourcedump.xml" --dest "$dst" --base-url "$BASE" >/dev/null
      timed unpack-cd "$A" unpack --quiet "$CD/out/changedump.xml" --dest "$dst" --base-url "$BASE" ;;
    get-unpack) timed get-unpack "$A" get "http://127.0.0.1:$PORT/resourcedump.xml" -o "$dst.get" --unpack "$dst" --base-url "$BASE" --quiet ;;
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
read -r -a steps <<< "${STEPS:-unzip unpack unzip-cd unpack-cd get-unpack verify-before verify pack}"
[ "${BEFORE_UNPACK:-0}" = 1 ] && steps+=(unpack-before)
for RUN in $(seq "$RUNS"); do
  echo "run $RUN"
  order=("${steps[@]}")
  if [ $((RUN % 2)) -eq 0 ]; then # the other way round
    order=(); for ((k = ${#steps[@]} - 1; k >= 0; k--)); do order+=("${steps[k]}"); done
  fi
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
for a, b in (('unpack', 'unzip'), ('unpack-cd', 'unzip-cd'), ('get-unpack', 'unzip')):
    if a in by and b in by:
        r = med(a,'wall')/med(b,'wall')
        runs = ' '.join('%.3f' % (float(x['wall'])/float(y['wall'])) for x, y in zip(by[a], by[b]))
        print(f"{a} / {b} wall: {r:.3f} (rsdump {'faster' if r < 1 else 'not faster'}; per run: {runs})")
if 'verify' in by and 'verify-before' in by:
    print(f"verify before / after wall: {med('verify-before','wall')/med('verify','wall'):.2f}x faster, CPU {med('verify-before','cpu')/med('verify','cpu'):.2f}x less")
if 'unpack-before' in by:
    print(f"unpack before / after wall: {med('unpack-before','wall')/med('unpack','wall'):.2f}x faster")
PY
