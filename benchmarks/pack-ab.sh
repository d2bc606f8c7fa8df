#!/usr/bin/env bash
# A/B pack benchmark: two rsdump binaries packing the same tree, runs
# alternating (and alternating which binary goes first), medians of RUNS
# pairs, wall and CPU (user+sys) seconds. The default tree is metalink.sh's
# 4 GiB of random data in 4 files of 1 GiB: files over 8 MiB that do not
# deflate, so streamed and stored, the path a change to stored entries
# touches.
# Usage: benchmarks/pack-ab.sh OLD_BIN NEW_BIN [RUNS] [pack flags...]
#   data in $BENCH_DIR (default /tmp/rsdump-bench-ml). Needs GNU time.
set -euo pipefail
A=$1 B=$2 RUNS=${3:-5}; shift $(( $# < 3 ? $# : 3 ))
W=${BENCH_DIR:-/tmp/rsdump-bench-ml}
mkdir -p "$W/src"
if [ ! -f "$W/src/.done" ]; then
  for i in 1 2 3 4; do head -c 1073741824 /dev/urandom > "$W/src/f$i.bin"; done
  touch "$W/src/.done"
fi
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
run() { # run BIN: "WALL CPU"
  rm -rf "$W/out"; sync
  /usr/bin/time -f '%e %U %S' -o "$W/time" "$1" pack "$W/src" --base-url http://example.org/rs/ -o "$W/out" --quiet \
    --hash sha-256 --max-package-size 5368709120 "${FLAGS[@]}" >/dev/null
  awk '{printf "%s %.2f\n", $1, $2+$3}' "$W/time"
}
FLAGS=("$@")
echo "machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); flags: ${FLAGS[*]:-(default)}"
aw=() ac=() bw=() bc=()
for i in $(seq "$RUNS"); do
  if [ $((i % 2)) -eq 1 ]; then
    read -r w c < <(run "$A"); aw+=("$w"); ac+=("$c"); read -r w c < <(run "$B"); bw+=("$w"); bc+=("$c")
  else
    read -r w c < <(run "$B"); bw+=("$w"); bc+=("$c"); read -r w c < <(run "$A"); aw+=("$w"); ac+=("$c")
  fi
  echo "pair $i: A ${aw[-1]} s (CPU ${ac[-1]} s), B ${bw[-1]} s (CPU ${bc[-1]} s)"
done
a=$(printf '%s\n' "${aw[@]}" | median); b=$(printf '%s\n' "${bw[@]}" | median)
x=$(printf '%s\n' "${ac[@]}" | median); y=$(printf '%s\n' "${bc[@]}" | median)
echo "median of $RUNS: A $a s wall, $x s CPU; B $b s wall, $y s CPU; B/A wall $(awk "BEGIN{printf \"%.3f\", $b/$a}"), CPU $(awk "BEGIN{printf \"%.3f\", $y/$x}")"
