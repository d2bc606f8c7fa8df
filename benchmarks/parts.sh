#!/usr/bin/env bash
# Claimed parts (issue 42): balance, CPU cost and merge, medians of RUNS.
#
#   skew   a tree where one prefix ("big/") holds 40% of the bytes and one
#          file is far larger than the rest, packed by one process, by 4
#          fixed shards (--shard K/4) and by 4 workers claiming 16 parts
#          (--shard K/4 --parts 16); each process is a "machine" of half a
#          core (a cgroup v1 CPU quota, as root; without one the workers
#          share the cores and the figure says so). The ideal wall time of
#          4 machines is max(one / 4, the largest file's own time).
#   cpu    user+system CPU of one unsharded pack against 4 workers of 16
#          parts (all at once, no quota) plus the merge, same tree.
#   merge  pack --merge of 100 parts of 100,000 and of 1,000,000 small
#          files: wall time and peak RSS (GNU time), each merge on a fresh
#          copy of the workers' output.
#
# Usage: [SECTIONS="skew cpu merge"] benchmarks/parts.sh [RUNS]
#   (data goes to $BENCH_DIR, default /tmp/rsdump-bench)
# Needs: go, python3, GNU time (/usr/bin/time), bc.
set -euo pipefail
RUNS=${1:-3}
SECTIONS=${SECTIONS:-skew cpu merge}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
W=${BENCH_DIR:-/tmp/rsdump-bench}
mkdir -p "$W"
cd "$ROOT"
go build -o "$W/rsdump" ./cmd/rsdump
RSDUMP="$W/rsdump"
. "$ROOT/benchmarks/lib.sh"
FLAGS=(--base-url http://127.0.0.1/rs/ --at 2026-01-01T00:00:00Z --max-package-size 64MiB --quiet)
now() { date +%s.%N; }
elapsed() { echo "$2 - $1" | bc; }
say() { echo "$@" | tee -a "$W/parts.log"; }
say "== benchmarks/parts.sh $(date -u +%FT%TZ), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), $(git rev-parse --short HEAD)"

# genskew DIR: 600 MB in 2,400 files of 256 KiB over 24 directories, one
# file of 64 MiB among them, and big/ with 110 files of 4 MiB: 40% of the
# bytes under one prefix.
genskew() {
  [ -d "$1" ] && return
  python3 - "$1.tmp" <<'PY'
import os, shutil, sys
d = sys.argv[1]
shutil.rmtree(d, ignore_errors=True)
def put(rel, n):
    p = os.path.join(d, rel)
    os.makedirs(os.path.dirname(p), exist_ok=True)
    with open(p, 'wb') as f:
        f.write(os.urandom(n))
for i in range(2400):
    put('a%02d/f%05d.bin' % (i % 24, i), 256 << 10)
put('a11/huge.bin', 64 << 20)
for i in range(110):
    put('big/s%d/g%04d.bin' % (i % 4, i), 4 << 20)
PY
  mv "$1.tmp" "$1"
}

# MACHINE_CPU of a core per "machine" (default half): cgroup v1 CPU quotas,
# when we may make them. On a machine loaded by others a quota is only a
# ceiling; SHARES (cpu.shares, e.g. 65536 against 1024 a process) lets the
# machines reach it while the others keep the rest of the cores.
MACHINE_CPU=${MACHINE_CPU:-0.5}
CG=/sys/fs/cgroup/cpu
QUOTA=0
if [ "$(id -u)" = 0 ] && [ -w "$CG" ]; then
  QUOTA=1
  for k in 1 2 3 4; do
    mkdir -p "$CG/rsdump-bench-$k"
    echo 100000 > "$CG/rsdump-bench-$k/cpu.cfs_period_us"
    printf '%.0f\n' "$(echo "$MACHINE_CPU * 100000" | bc -l)" > "$CG/rsdump-bench-$k/cpu.cfs_quota_us"
    [ -n "${SHARES:-}" ] && echo "$SHARES" > "$CG/rsdump-bench-$k/cpu.shares"
  done
  trap 'for k in 1 2 3 4; do rmdir "$CG/rsdump-bench-$k" 2>/dev/null || true; done' EXIT
fi
# on K CMD...: CMD as machine K (in its cgroup, when there are quotas).
on() {
  local k=$1; shift
  if [ "$QUOTA" = 1 ]; then
    sh -c 'echo $$ > "$0/cgroup.procs"; exec "$@"' "$CG/rsdump-bench-$k" "$@"
  else
    "$@"
  fi
}

# timed K FILE CMD...: CMD as machine K, its user+system CPU seconds
# appended to FILE.
timed() {
  local k=$1 f=$2; shift 2
  on "$k" /usr/bin/time -f "%U %S" -o "$f.t$k" "$@"
  awk '{print $1 + $2}' "$f.t$k" >> "$f"
}

# maxof FILE: the largest number in FILE.
maxof() { sort -g "$1" | tail -1; }

skew() {
  local src=$W/skew mb
  genskew "$src"
  mkdir -p "$W/huge-only/a11"; cp -f "$src/a11/huge.bin" "$W/huge-only/a11/"
  mb=$(du -sm --apparent-size "$src" | cut -f1)
  for f in one big fixed parts fixed-merge parts-merge one-cpu big-cpu fixed-cpu parts-cpu fixed-bal parts-bal; do : > "$W/skew-$f.s"; done
  for r in $(seq "$RUNS"); do
    rm -rf "$W/o"; local t0; t0=$(now)
    timed 1 "$W/skew-one-cpu.s" "$RSDUMP" pack "$src" -o "$W/o" "${FLAGS[@]}"; elapsed "$t0" "$(now)" >> "$W/skew-one.s"
    rm -rf "$W/o"; t0=$(now)
    timed 1 "$W/skew-big-cpu.s" "$RSDUMP" pack "$W/huge-only" -o "$W/o" "${FLAGS[@]}"; elapsed "$t0" "$(now)" >> "$W/skew-big.s"
    for kind in fixed parts; do
      rm -rf "$W/o"; t0=$(now); local pids=() extra=()
      [ $kind = parts ] && extra=(--parts 16)
      : > "$W/run-cpu.s"
      for k in 1 2 3 4; do
        timed "$k" "$W/run-cpu.s" "$RSDUMP" pack "$src" -o "$W/o" --shard "$k/4" "${extra[@]}" "${FLAGS[@]}" & pids+=($!)
      done
      for p in "${pids[@]}"; do wait "$p"; done
      local t1; t1=$(now); elapsed "$t0" "$t1" >> "$W/skew-$kind.s"
      maxof "$W/run-cpu.s" >> "$W/skew-$kind-cpu.s"
      # balance: the busiest worker's CPU over the workers' mean, which
      # the load of the machine inflates alike for every worker
      awk '{s += $1; if ($1 > m) m = $1} END {printf "%.3f\n", m / (s / NR)}' "$W/run-cpu.s" >> "$W/skew-$kind-bal.s"
      on 1 "$RSDUMP" pack --merge -o "$W/o" "${FLAGS[@]}"; elapsed "$t1" "$(now)" >> "$W/skew-$kind-merge.s"
    done
    say "skew run $r: wall (CPU) one $(tail -1 "$W/skew-one.s") ($(tail -1 "$W/skew-one-cpu.s")) s, largest file $(tail -1 "$W/skew-big.s") ($(tail -1 "$W/skew-big-cpu.s")) s, fixed $(tail -1 "$W/skew-fixed.s") (busiest $(tail -1 "$W/skew-fixed-cpu.s"), balance $(tail -1 "$W/skew-fixed-bal.s")) + merge $(tail -1 "$W/skew-fixed-merge.s") s, parts $(tail -1 "$W/skew-parts.s") (busiest $(tail -1 "$W/skew-parts-cpu.s"), balance $(tail -1 "$W/skew-parts-bal.s")) + merge $(tail -1 "$W/skew-parts-merge.s") s, load $(cut -d' ' -f1 /proc/loadavg)"
  done
  say "== skew: $mb MB, 40% under big/, largest file 64 MiB; quotas: $QUOTA ($MACHINE_CPU of a core per machine, shares ${SHARES:-default}); medians of $RUNS"
  local u
  for u in "" -cpu; do
    local o b f p ideal what=wall
    [ "$u" = -cpu ] && what="CPU (the busiest worker's: the wall time of machines of equal speed)"
    o=$(median < "$W/skew-one$u.s"); b=$(median < "$W/skew-big$u.s"); f=$(median < "$W/skew-fixed$u.s"); p=$(median < "$W/skew-parts$u.s")
    ideal=$(echo "o=$o/4; if (o > $b) o else $b" | bc -l)
    say "-- $what: one machine $o s; largest file alone $b s; ideal for 4: $(printf %.2f "$ideal") s"
    say "   4 fixed shards: $f s: $(printf %.2f "$(echo "$f / $ideal" | bc -l)") x ideal"
    say "   4 workers, 16 claimed parts: $p s: $(printf %.2f "$(echo "$p / $ideal" | bc -l)") x ideal"
  done
  say "-- balance (busiest worker's CPU / the workers' mean): fixed shards $(median < "$W/skew-fixed-bal.s"), claimed parts $(median < "$W/skew-parts-bal.s")"
  say "   merges: fixed $(median < "$W/skew-fixed-merge.s") s, parts $(median < "$W/skew-parts-merge.s") s"
}

# cputime CMD...: user+system seconds of CMD.
cputime() { /usr/bin/time -f "%U %S" -o "$W/time.out" "$@" >/dev/null; awk '{print $1 + $2}' "$W/time.out"; }

cpu() {
  local src=$W/skew
  genskew "$src"
  : > "$W/cpu-one.s"; : > "$W/cpu-seq.s"; : > "$W/cpu-conc.s"
  for r in $(seq "$RUNS"); do
    rm -rf "$W/o"; cputime "$RSDUMP" pack "$src" -o "$W/o" "${FLAGS[@]}" >> "$W/cpu-one.s"
    # One worker packing the 16 parts one after the other, then the merge:
    # what sharding itself costs.
    rm -rf "$W/o"; local seq
    seq=$(cputime "$RSDUMP" pack "$src" -o "$W/o" --shard 1/1 --parts 16 "${FLAGS[@]}")
    echo "$seq + $(cputime "$RSDUMP" pack --merge -o "$W/o" "${FLAGS[@]}")" | bc >> "$W/cpu-seq.s"
    # Four workers at once on these two cores, then the merge.
    rm -rf "$W/o"; local pids=() total=0
    for k in 1 2 3 4; do
      ( cputime "$RSDUMP" pack "$src" -o "$W/o" --shard "$k/4" --parts 16 "${FLAGS[@]}" > "$W/cpu-$k.s" ) & pids+=($!)
    done
    for p in "${pids[@]}"; do wait "$p"; done
    for k in 1 2 3 4; do total=$(echo "$total + $(cat "$W/cpu-$k.s")" | bc); done
    echo "$total + $(cputime "$RSDUMP" pack --merge -o "$W/o" "${FLAGS[@]}")" | bc >> "$W/cpu-conc.s"
    say "cpu run $r: one $(tail -1 "$W/cpu-one.s") s, 1 worker x 16 parts + merge $(tail -1 "$W/cpu-seq.s") s, 4 workers at once + merge $(tail -1 "$W/cpu-conc.s") s, load $(cut -d' ' -f1 /proc/loadavg)"
  done
  local o q c
  o=$(median < "$W/cpu-one.s"); q=$(median < "$W/cpu-seq.s"); c=$(median < "$W/cpu-conc.s")
  say "== cpu (user+system, medians of $RUNS): one pack $o s; 16 parts by one worker + merge $q s: $(printf %+.1f "$(echo "($q / $o - 1) * 100" | bc -l)")%; by 4 workers at once on $(nproc) cores + merge $c s: $(printf %+.1f "$(echo "($c / $o - 1) * 100" | bc -l)")%"
}

merge() {
  for n in 100000 1000000; do
    local src=$W/small$n out=$W/parts$n
    gen_small "$src" "$n"
    if [ ! -f "$out.done" ]; then
      rm -rf "$out"; local pids=()
      for k in 1 2; do "$RSDUMP" pack "$src" -o "$out" --shard "$k/2" --parts 100 "${FLAGS[@]}" & pids+=($!); done
      for p in "${pids[@]}"; do wait "$p"; done
      touch "$out.done"
    fi
    : > "$W/merge-$n.s"; : > "$W/merge-$n.kb"
    for r in $(seq "$RUNS"); do
      rm -rf "$out.run"; cp -a --reflink=auto "$out" "$out.run"
      /usr/bin/time -f "%e %M" -o "$W/time.out" "$RSDUMP" pack --merge -o "$out.run" "${FLAGS[@]}"
      read -r e kb < "$W/time.out"
      echo "$e" >> "$W/merge-$n.s"; echo "$kb" >> "$W/merge-$n.kb"
      say "merge $n run $r: $e s, $((kb / 1024)) MiB peak RSS, load $(cut -d' ' -f1 /proc/loadavg)"
    done
    say "== merge of 100 parts, $n entries: $(median < "$W/merge-$n.s") s, $(( $(median < "$W/merge-$n.kb" | cut -d. -f1) / 1024 )) MiB peak RSS (medians of $RUNS)"
    rm -rf "$out.run"
  done
}

for s in $SECTIONS; do "$s"; done
