#!/usr/bin/env bash
# rsdump serve against a plain static server (benchmarks/fileserve,
# net/http.FileServer) as the two loopback mirrors (127.0.0.1 and
# 127.0.0.2) of one dump: FILES random files of 1 MiB (default 512:
# 512 MiB), packed with --metalink and the second address as --mirror. The
# two servers alternate run by run; medians of RUNS runs. For each it times
#   get-dump   rsdump get of resourcedump.xml (mirrors from the document)
#   get-urls   rsdump get of the package URLs on 127.0.0.1 alone: the
#              mirrors and hashes only rsdump serve's RFC 6249 headers give
# with the client's wall and CPU (GNU time) and the servers' CPU (utime +
# stime from /proc), warm page cache.
# Usage: benchmarks/serve.sh [RUNS]   (data in $BENCH_DIR, default
#   /tmp/rsdump-bench-serve; PORT, default 18590)
# Needs: go, python3, GNU time (/usr/bin/time).
set -euo pipefail
RUNS=${1:-3}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
W=${BENCH_DIR:-/tmp/rsdump-bench-serve}
PORT=${PORT:-18590}
FILES=${FILES:-512}
. "$ROOT/benchmarks/lib.sh"
mkdir -p "$W"
cd "$ROOT"
go build -o "$W/rsdump" ./cmd/rsdump
go build -o "$W/fileserve" ./benchmarks/fileserve
gen "$W/src" "$FILES" 1048576
A="http://127.0.0.1:$PORT/" B="http://127.0.0.2:$PORT/"
if [ ! -f "$W/dump/resourcedump.xml" ]; then
  "$W/rsdump" pack "$W/src" --base-url "$A" -o "$W/dump" --quiet --compress store --metalink --mirror "$B" --max-package-size 64MiB
fi
PKGS=$(cd "$W/dump" && ls resourcedump-*.zip | sed "s|^|$A|")
cat "$W/src"/*/* >/dev/null; cat "$W/dump"/* >/dev/null # warm

PIDS=()
trap 'kill "${PIDS[@]}" 2>/dev/null || true' EXIT
start() { # start SERVER: both mirrors
  case $1 in
    fileserve) "$W/fileserve" -dir "$W/dump" -addr "127.0.0.1:$PORT,127.0.0.2:$PORT" 2>/dev/null & PIDS=($!) ;;
    serve)
      "$W/rsdump" serve "$W/dump" --addr "127.0.0.1:$PORT" --mirror "$B" -q & PIDS=($!)
      "$W/rsdump" serve "$W/dump" --addr "127.0.0.2:$PORT" --mirror "$A" -q & PIDS+=($!) ;;
  esac
  for _ in $(seq 50); do curl -sf -o /dev/null "${A}resourcedump.xml" 2>/dev/null && break; sleep 0.1; done
}
stop() { kill "${PIDS[@]}"; wait "${PIDS[@]}" 2>/dev/null || true; }
ticks() { local t=0; for p in "${PIDS[@]}"; do t=$((t + $(awk '{print $14+$15}' "/proc/$p/stat"))); done; echo "$t"; }
HZ=$(getconf CLK_TCK)

OUT="$W/results.tsv"
printf 'server\tcommand\trun\twall_s\tclient_cpu_s\tserver_cpu_s\n' >"$OUT"
for run in $(seq "$RUNS"); do
  order="fileserve serve"; [ $((run % 2)) = 0 ] && order="serve fileserve"
  for srv in $order; do
    start "$srv"
    for c in get-dump get-urls; do
      rm -rf "$W/got"
      case $c in
        get-dump) args=("${A}resourcedump.xml") ;;
        get-urls) args=($PKGS) ;;
      esac
      t0=$(ticks)
      /usr/bin/time -f '%e %U %S' -o "$W/time" "$W/rsdump" get "${args[@]}" -o "$W/got" -q
      t1=$(ticks)
      read -r wall u s <"$W/time"
      printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$srv" "$c" "$run" "$wall" \
        "$(echo "$u + $s" | bc)" "$(echo "scale=2; ($t1 - $t0) / $HZ" | bc)" >>"$OUT"
    done
    stop
  done
done

echo "median of $RUNS runs, $FILES MiB, warm cache"
printf '%-10s %-9s %8s %10s %10s\n' server command wall_s client_cpu server_cpu
for srv in fileserve serve; do
  for c in get-dump get-urls; do
    col() { awk -F'\t' -v s="$srv" -v c="$c" -v k="$1" '$1==s && $2==c {print $k}' "$OUT" | median; }
    printf '%-10s %-9s %8s %10s %10s\n' "$srv" "$c" "$(col 4)" "$(col 5)" "$(col 6)"
  done
done
rm -rf "$W/got"
