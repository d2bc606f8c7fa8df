#!/usr/bin/env bash
# Memory of applying a large list (issue 24, point 6): a Resource List and
# a Change List (every entry an update) of N entries (default 805,000) in
# parts of 50,000 under an index, read from disk, into a tree that holds
# every resource already (benchmarks/listmem gen), so that the run is the
# list's work and not the network's. Each is applied RUNS times (default
# 3) by benchmarks/listmem built at BEFORE (default: where this branch
# left main) and at this tree,
# the order alternating run by run, each in a process of its own, under
# the CLI's soft memory limit: peak heap in use (sampled every 5 ms), peak
# RSS (VmHWM) and wall time, one row per run, then the medians.
# Usage: benchmarks/listmem.sh [RUNS]   (N=entries; data in $BENCH_DIR,
#   default /tmp/rsdump-bench-listmem-N: the lists, about 475 B an entry,
#   and the tree)
# Needs: go, git.
set -euo pipefail
RUNS=${1:-3}
N=${N:-805000}
BEFORE=${BEFORE:-$(git -C "$(dirname "$0")" merge-base HEAD main)}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
W=${BENCH_DIR:-/tmp/rsdump-bench-listmem-$N}
. "$ROOT/benchmarks/lib.sh"
mkdir -p "$W"
cd "$ROOT"

REV=$(git rev-parse --short "$BEFORE")
if [ ! -x "$W/listmem-$REV" ]; then
  rm -rf "$W/before-src"; mkdir -p "$W/before-src"
  git archive "$REV" | tar -x -C "$W/before-src"
  cp -r benchmarks/listmem "$W/before-src/benchmarks/" # the same program, over the BEFORE library
  (cd "$W/before-src" && go build -o "$W/listmem-$REV" ./benchmarks/listmem)
  rm -rf "$W/before-src"
fi
go build -o "$W/listmem-after" ./benchmarks/listmem
[ -f "$W/work/list/resourcelist.xml" ] || "$W/listmem-after" gen -n "$N" -src=false "$W/work"

out="$W/runs.tsv"
: >"$out"
for run in $(seq "$RUNS"); do
  order="$REV after"
  [ $((run % 2)) = 0 ] && order="after $REV"
  for build in $order; do
    for list in resourcelist.xml changelist.xml; do
      printf '%s\t%s\t' "$run" "$build" >>"$out"
      "$W/listmem-$build" apply -list "$list" "$W/work" >>"$out"
    done
  done
done
cat "$out"
echo "medians (build, list, seconds, heap MB, RSS MB):"
for build in "$REV" after; do
  for list in resourcelist.xml changelist.xml; do
    rows=$(awk -F'\t' -v b="$build" -v l="$list" '$2 == b && $3 == l' "$out")
    printf '%s\t%s\t%s\t%s\t%s\n' "$build" "$list" \
      "$(cut -f7 <<<"$rows" | cut -d' ' -f1 | median)" \
      "$(cut -f8 <<<"$rows" | cut -d' ' -f1 | median)" \
      "$(cut -f9 <<<"$rows" | cut -d' ' -f1 | median)"
  done
done
