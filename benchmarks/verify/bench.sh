#!/usr/bin/env bash
# Verify and unpack benchmark: rsdump verify against `unzip -t`, and
# rsdump unpack (every bitstream hashed, synced, renamed) against
# `unzip -o` followed by `sha256sum -c`, on the pack benchmark's dump of
# 2,048 random 1 MiB files (2 GiB, stored). Side by side in one run,
# medians of RUNS runs, peak RSS from GNU time. The page cache is warm for
# every command alike: the dump is read once before timing.
# Usage: benchmarks/verify/bench.sh [RUNS]   (data in $BENCH_DIR, default /tmp/rsdump-bench-vu)
# Needs: go, unzip, coreutils, GNU time (/usr/bin/time), python3.
set -euo pipefail
RUNS=${1:-5}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
W=${BENCH_DIR:-/tmp/rsdump-bench-vu}
BASE=http://example.org/rs/
mkdir -p "$W"
cd "$ROOT"
go build -o "$W/rsdump" ./cmd/rsdump
RSDUMP="$W/rsdump"

. "$ROOT/benchmarks/lib.sh"
gen "$W/src" 2048 1048576 # the pack benchmark's corpus: 2,048 random 1 MiB files
rm -rf "$W/out"
"$RSDUMP" pack "$W/src" --base-url "$BASE" -o "$W/out" --quiet --compress store --hash sha-256
# The checklist sha256sum -c reads: what a manifest says, in sha256sum's format.
(cd "$W/src" && find . -type f -printf '%P\n' | sort | xargs sha256sum | sed 's#  #  resources/#') > "$W/sums"
cat "$W"/out/*.zip > /dev/null

timed() { # timed CMD...: wall seconds on stdout, peak RSS KB in $W/rss; fails if CMD fails
  /usr/bin/time -f "%e %M" -o "$W/time" "$@" >/dev/null 2>"$W/stderr" || { cat "$W/stderr" >&2; return 1; }
  read -r s k < "$W/time"; echo "$k" > "$W/rss"; echo "$s"
}
fresh() { rm -rf "$W/dst"; }
rs_verify() { "$RSDUMP" verify --quiet "$W/out"; }
rs_verify_zips() { "$RSDUMP" verify --quiet "$W"/out/*.zip; }
unzip_t() { unzip -tqq "$W/out/*.zip"; }
rs_unpack() { "$RSDUMP" unpack --quiet "$W/out/resourcedump.xml" --dest "$W/dst" --base-url "$BASE"; }
unzip_sha() { unzip -oq "$W/out/*.zip" -d "$W/dst" && cd "$W/dst" && sha256sum -c --quiet "$W/sums"; }
export -f rs_verify rs_verify_zips unzip_t rs_unpack unzip_sha; export W RSDUMP BASE

echo "machine: $(nproc) cores, $(go version | cut -d' ' -f3), load $(cut -d' ' -f1-3 /proc/loadavg)"
declare -A T R
for _ in $(seq "$RUNS"); do
  for b in rs_verify rs_verify_zips unzip_t rs_unpack unzip_sha; do
    fresh
    T[$b]+="$(timed bash -c "$b") "; R[$b]+="$(cat "$W/rss") "
  done
done
fresh
MB=$(cat "$W"/out/*.zip | wc -c | awk '{print $1/1e6}')
report() { # report LABEL BENCH
  local s r
  s=$(printf '%s\n' ${T[$2]} | median); r=$(printf '%s\n' ${R[$2]} | median)
  printf '%-40s %6.2f s %7.0f MB/s  peak RSS %6.0f KB   runs: %s\n' "$1" "$s" "$(awk "BEGIN{print $MB/$s}")" "$r" "${T[$2]}"
}
report "rsdump verify (crc + sha-256 + pkg hash)" rs_verify
report "rsdump verify *.zip (crc + sha-256)" rs_verify_zips
report "unzip -t (crc only)" unzip_t
report "rsdump unpack (verified, fsynced)" rs_unpack
report "unzip -o && sha256sum -c" unzip_sha
v=$(printf '%s\n' ${T[rs_verify]} | median); t=$(printf '%s\n' ${T[unzip_t]} | median)
u=$(printf '%s\n' ${T[rs_unpack]} | median); z=$(printf '%s\n' ${T[unzip_sha]} | median)
echo "verify vs unzip -t: $(awk "BEGIN{printf \"%.2f\", $t/$v}")x (target >= 1)"
echo "unpack vs unzip -o + sha256sum -c: $(awk "BEGIN{printf \"%.2f\", $z/$u}")x (target >= 1.5)"
