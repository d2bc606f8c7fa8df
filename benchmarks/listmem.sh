#!/usr/bin/env bash
# Memory of applying a large list (issue 24, point 6): a Resource List and
# a Change List (every entry an update) of N entries (default 805,000) in
# parts of 50,000 under an index, read from disk, into a tree that holds
# every resource already (benchmarks/listmem gen), so that the run is the
# list's work and not the network's. A run applies the Resource List to
# the tree with no state (adopting its files), then the Change List over
# it; RUNS runs (default 3) by benchmarks/listmem built at BEFORE
# (default: where this branch left main) and at this tree, the order
# alternating run by run, each apply in a process of its own, under the
# CLI's soft memory limit: peak heap in use (sampled every 5 ms), peak RSS
# (VmHWM) and wall time, one row per apply, then the medians.
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
    # Each run starts from no state: the Resource List (adopting the tree),
    # then the Change List over it.
    printf '%s\t%s\t' "$run" "$build" >>"$out"
    "$W/listmem-$build" apply -fresh -list resourcelist.xml "$W/work" >>"$out"
    printf '%s\t%s\t' "$run" "$build" >>"$out"
    "$W/listmem-$build" apply -list changelist.xml "$W/work" >>"$out"
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
