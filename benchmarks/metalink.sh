#!/usr/bin/env bash
# Metalink benchmarks (issue 4), medians of RUNS runs:
#  pack:   rsdump pack of a 4 GiB tree (4 files of 1 GiB random data) into
#          one 4 GiB package, with and without --metalink, runs alternating
#          (and alternating which variant goes first), so that the cost of
#          the piece hashes is measured side by side; the ratio should be
#          under 1.05. CPU time (user+sys) is printed too: on a shared
#          machine it varies less than wall time.
#  decode: metalink.Decode of the 808-piece MirrorBrain file of the corpus
#          and of a generated document with a million piece hashes, under
#          /usr/bin/time: wall time and peak RSS.
# Usage: benchmarks/metalink.sh [pack|decode|all] [RUNS]
#   data goes to $BENCH_DIR (default /tmp/rsdump-bench-ml); the 4 GiB
#   tree is generated once and kept. Needs go, GNU time, coreutils.
set -euo pipefail
WHAT=${1:-all}
RUNS=${2:-5}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
W=${BENCH_DIR:-/tmp/rsdump-bench-ml}
CORPUS=${CORPUS:-$ROOT/../shared/metalink/corpus/libmetalink--LibO_3.5.4_Win_x86_install_multi.msi.meta4}
mkdir -p "$W"
cd "$ROOT"
go build -o "$W/rsdump" ./cmd/rsdump
go build -o "$W/metalinkdecode" ./benchmarks/metalinkdecode

median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }

timed() { # timed CMD...: runs CMD, prints "WALL_S PEAK_KB CPU_S" (CPU = user+sys); its stdout goes to $W/stdout
  /usr/bin/time -f '%e %M %U %S' -o "$W/time" "$@" >"$W/stdout"
  awk '{printf "%s %s %.2f\n", $1, $2, $3+$4}' "$W/time"
}

gen_tree() {
  [ -f "$W/src/.done" ] && return
  rm -rf "$W/src"; mkdir -p "$W/src"
  for i in 1 2 3 4; do
    head -c 1073741824 /dev/urandom > "$W/src/f$i.bin"
  done
  touch "$W/src/.done"
}

bench_pack() {
  gen_tree
  echo "machine: $(nproc) cores, $(go version | cut -d' ' -f3), load $(cut -d' ' -f1-3 /proc/loadavg); tree: $(du -sh --apparent-size "$W/src" | cut -f1) in 4 files"
  local plain=() meta=() prss=() mrss=() pcpu=() mcpu=() args=(--metalink --mirror http://mirror.example.net/rs/,priority=2)
  for i in $(seq "$RUNS"); do
    if [ $((i % 2)) -eq 1 ]; then
      read -r s k c < <(pack_run); plain+=("$s"); prss+=("$k"); pcpu+=("$c")
      read -r s k c < <(pack_run "${args[@]}"); meta+=("$s"); mrss+=("$k"); mcpu+=("$c")
    else
      read -r s k c < <(pack_run "${args[@]}"); meta+=("$s"); mrss+=("$k"); mcpu+=("$c")
      read -r s k c < <(pack_run); plain+=("$s"); prss+=("$k"); pcpu+=("$c")
    fi
    echo "run $i: without ${plain[-1]} s (CPU ${pcpu[-1]} s), with --metalink ${meta[-1]} s (CPU ${mcpu[-1]} s); load $(cut -d' ' -f1 /proc/loadavg)"
  done
  "$W/rsdump" metalink --check "$W/out/resourcedump-00001.zip.meta4" | head -5
  local p m pc mc
  p=$(printf '%s\n' "${plain[@]}" | median); m=$(printf '%s\n' "${meta[@]}" | median)
  pc=$(printf '%s\n' "${pcpu[@]}" | median); mc=$(printf '%s\n' "${mcpu[@]}" | median)
  echo "pack 4 GiB, store, sha-256, $RUNS runs each: without --metalink median ${p} s wall, ${pc} s CPU," \
    "peak RSS $(printf '%s\n' "${prss[@]}" | median) KB; with --metalink median ${m} s wall, ${mc} s CPU," \
    "peak RSS $(printf '%s\n' "${mrss[@]}" | median) KB; wall ratio $(awk "BEGIN{printf \"%.3f\", $m/$p}")," \
    "CPU ratio $(awk "BEGIN{printf \"%.3f\", $mc/$pc}")"
}

pack_run() { # pack_run ARGS...: one pack of the 4 GiB tree into one package
  rm -rf "$W/out"; sync
  timed "$W/rsdump" pack "$W/src" --base-url http://example.org/rs/ -o "$W/out" --quiet \
    --compress store --hash sha-256 --max-package-size 5368709120 "$@"
}

bench_decode() {
  [ -f "$W/million.meta4" ] || "$W/metalinkdecode" -gen 1000000 "$W/million.meta4"
  for doc in "$CORPUS" "$W/million.meta4"; do
    local s=() k=() d=()
    "$W/metalinkdecode" "$doc"
    for _ in $(seq "$RUNS"); do
      read -r a b _ < <(timed "$W/metalinkdecode" "$doc"); s+=("$a"); k+=("$b")
      d+=("$(grep -o 'decode [0-9.]* s' "$W/stdout" | cut -d' ' -f2)")
    done
    echo "decode $(basename "$doc") ($(stat -c %s "$doc") bytes): process median $(printf '%s\n' "${s[@]}" | median) s" \
      "(Decode alone $(printf '%s\n' "${d[@]}" | median) s), peak RSS $(printf '%s\n' "${k[@]}" | median) KB; process runs ${s[*]}"
  done
}

case $WHAT in
  pack) bench_pack ;;
  decode) bench_decode ;;
  all) bench_decode; bench_pack ;;
  *) echo "usage: $0 [pack|decode|all] [RUNS]" >&2; exit 2 ;;
esac
