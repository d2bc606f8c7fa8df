#!/usr/bin/env bash
# Sharded pack benchmark (issue 15): the same tree packed by one
# `rsdump pack` process, and by N `rsdump pack --shard K/N` processes at
# once followed by `rsdump pack --merge`, medians of RUNS runs; into a
# directory, and into a bucket of a VersityGW on loopback when versitygw
# is installed. On one machine the shards share its cores: this measures
# the cost of sharding (the merge, the overlap of N processes), not the
# gain of N machines, which is projected from it in benchmarks/README.md.
# Usage: [S3=0] benchmarks/shards.sh [RUNS] [FILES] [SIZE] [N]
#   (data goes to $BENCH_DIR, default /tmp/rsdump-bench)
# Needs: go, python3, GNU time (/usr/bin/time); versitygw for the S3 rows.
set -euo pipefail
RUNS=${1:-3}
FILES=${2:-2000}
SIZE=${3:-262144}
N=${4:-3}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
W=${BENCH_DIR:-/tmp/rsdump-bench}
mkdir -p "$W"
cd "$ROOT"
go build -o "$W/rsdump" ./cmd/rsdump
RSDUMP="$W/rsdump"
. "$ROOT/benchmarks/lib.sh"
SRC="$W/shard$FILES-$SIZE"
gen "$SRC" "$FILES" "$SIZE"
MB=$(du -sm --apparent-size "$SRC" | cut -f1)
FLAGS=(--base-url http://127.0.0.1/rs/ --at 2026-01-01T00:00:00Z --max-package-size 64MiB --quiet)

now() { date +%s.%N; }
elapsed() { echo "$2 - $1" | bc; }

# one OUT [EXTRA...]: one process; prints seconds.
one() {
  local out=$1; shift
  local t0; t0=$(now)
  "$RSDUMP" pack "$SRC" -o "$out" "${FLAGS[@]}" "$@"
  elapsed "$t0" "$(now)"
}

# sharded OUT [EXTRA...]: N shard processes at once, then the merge;
# prints "shards_seconds merge_seconds".
sharded() {
  local out=$1; shift
  local t0 t1 pids=()
  t0=$(now)
  for k in $(seq 1 "$N"); do
    "$RSDUMP" pack "$SRC" --shard "$k/$N" -o "$out" "${FLAGS[@]}" "$@" & pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p"; done
  t1=$(now)
  "$RSDUMP" pack --merge -o "$out" "${FLAGS[@]}" "$@"
  echo "$(elapsed "$t0" "$t1") $(elapsed "$t1" "$(now)")"
}

report() { # report LABEL FILE-OF-SECONDS
  local m; m=$(median < "$2")
  printf '%-34s %7.2f s  %7.1f MB/s\n' "$1" "$m" "$(echo "$MB / $m" | bc -l)"
}

bench() { # bench KIND OUTBASE [EXTRA...]
  local kind=$1 base=$2; shift 2
  : > "$W/one.s"; : > "$W/shards.s"; : > "$W/merge.s"; : > "$W/total.s"
  for r in $(seq 1 "$RUNS"); do
    clean "$base-one-$r"; one "$base-one-$r" "$@" >> "$W/one.s"
    clean "$base-sh-$r"; read -r s m < <(sharded "$base-sh-$r" "$@")
    echo "$s" >> "$W/shards.s"; echo "$m" >> "$W/merge.s"; echo "$s + $m" | bc >> "$W/total.s"
  done
  echo "== $kind: $FILES files, $MB MB, $N shards, $(nproc) cores, median of $RUNS"
  report "one process" "$W/one.s"
  report "$N shards at once" "$W/shards.s"
  report "merge" "$W/merge.s"
  report "$N shards + merge" "$W/total.s"
  echo "ratio (one process / $N shards + merge): $(echo "$(median < "$W/one.s") / $(median < "$W/total.s")" | bc -l | cut -c1-5)"
}

clean() { case "$1" in s3://*) ;; *) rm -rf "$1" ;; esac; }

bench disk "$W/shout"

VGW=$(command -v versitygw || echo "$(go env GOPATH)/bin/versitygw")
if [ "${S3:-1}" = 0 ]; then
  echo "S3=0: S3 rows skipped"
elif [ -x "$VGW" ]; then
  export AWS_ACCESS_KEY_ID=bench AWS_SECRET_ACCESS_KEY=bench-secret AWS_REGION=us-east-1 AWS_EC2_METADATA_DISABLED=true
  rm -rf "$W/vgw"; mkdir -p "$W/vgw/bench"
  ROOT_ACCESS_KEY=bench ROOT_SECRET_KEY=bench-secret "$VGW" --port 127.0.0.1:7391 posix "$W/vgw" >"$W/vgw.log" 2>&1 &
  VPID=$!
  trap 'kill $VPID 2>/dev/null' EXIT
  for _ in $(seq 100); do (echo > /dev/tcp/127.0.0.1/7391) 2>/dev/null && break; sleep 0.1; done
  # the posix backend serves each top-level directory as a bucket: "bench"
  bench "S3 (VersityGW on loopback)" "s3://bench/run" --s3-endpoint http://127.0.0.1:7391
else
  echo "versitygw not found: S3 rows skipped"
fi
