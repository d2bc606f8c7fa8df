#!/usr/bin/env bash
# Pack benchmark: rsdump pack against the pipelines a user would script
# (zip + sha256sum), side by side in one run, medians of RUNS runs.
# Usage: benchmarks/pack.sh [RUNS]   (data goes to $BENCH_DIR, default /tmp/rsdump-bench)
# Needs: go, zip, coreutils, GNU time (/usr/bin/time), python3.
set -euo pipefail
RUNS=${1:-5}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
W=${BENCH_DIR:-/tmp/rsdump-bench}
mkdir -p "$W"
cd "$ROOT"
go build -o "$W/rsdump" ./cmd/rsdump
go build -o "$W/limits" ./benchmarks/limits
RSDUMP="$W/rsdump"
. "$ROOT/benchmarks/lib.sh"

gen "$W/src1m" 2048 1048576
gen "$W/src4k" 200000 4096
if [ ! -d "$W/text" ]; then # a text-like corpus: Go's own sources
  mkdir -p "$W/text"; (cd "$(go env GOROOT)/src" && find . -name '*.go' -print0 | tar -cf - --null -T - | tar -xf - -C "$W/text")
fi

secs() { # secs FUNCTION ARGS...: wall seconds; peak RSS KB to $W/rss
  /usr/bin/time -f "%e %M" -o "$W/time" bash -c '"$@"' _ "$@" >/dev/null 2>&1
  read -r s k < "$W/time"; echo "$k" > "$W/rss"; echo "$s"
}
bytes_of() { du -sb --apparent-size "$1" | cut -f1; }
files_of() { find "$1" -type f | wc -l; }

zip_sha() { # the scripted pipeline: store into a ZIP, then hash every file
  rm -f "$W/out.zip"; (cd "$1" && zip -q -r "$2" "$W/out.zip" . && find . -type f -print0 | xargs -0 sha256sum > "$W/sums")
}
zip_only() { rm -f "$W/out.zip"; (cd "$1" && zip -q -r "$2" "$W/out.zip" .); }
rsdump_pack() { rm -rf "$W/out"; "$RSDUMP" pack "$1" --base-url http://example.org/rs/ -o "$W/out" --quiet "${@:2}"; }

export -f zip_sha zip_only rsdump_pack; export W RSDUMP
echo "machine: $(nproc) cores, $(go version | cut -d' ' -f3)"
sha=(); disk=()
for _ in $(seq "$RUNS"); do
  sha+=("$("$W/limits")")
  disk+=("$(dd if=/dev/zero of="$W/dd" bs=1M count=2048 conv=fsync 2>&1 | awk '/copied/ {print $(NF-1)*($NF=="GB/s"?1000:1)}')")
  rm -f "$W/dd"
done
SHA=$(printf '%s\n' "${sha[@]}" | median); DISK=$(printf '%s\n' "${disk[@]}" | median)
echo "limits: sha-256 all cores ${SHA} MB/s, disk write (dd, fsync) ${DISK} MB/s"

run_pair() { # run_pair LABEL PIPELINE SRC ZIPFLAG RSDUMP_FLAGS...
  local label=$1 pipe=$2 src=$3 zflag=$4; shift 4
  local r=() z=() rss=()
  for _ in $(seq "$RUNS"); do
    r+=("$(secs rsdump_pack "$src" "$@")"); rss+=("$(cat "$W/rss")")
    z+=("$(secs "$pipe" "$src" "$zflag")")
  done
  local rm zm b n
  rm=$(printf '%s\n' "${r[@]}" | median); zm=$(printf '%s\n' "${z[@]}" | median)
  b=$(bytes_of "$src"); n=$(files_of "$src")
  echo "$label: rsdump ${rm}s, $pipe ${zm}s; rsdump $(awk "BEGIN{printf \"%.0f MB/s %.0f files/s\", $b/1e6/$rm, $n/$rm}"), pipeline $(awk "BEGIN{printf \"%.0f MB/s %.0f files/s\", $b/1e6/$zm, $n/$zm}"), ratio $(awk "BEGIN{printf \"%.2f\", $zm/$rm}"), rsdump peak RSS $(printf '%s\n' "${rss[@]}" | median) KB"
  echo "$label: rsdump packages $(cat "$W"/out/*.zip | wc -c) bytes, zip output $(bytes_of "$W/out.zip") bytes; runs rsdump=${r[*]} zip=${z[*]}"
}
run_pair "2GiB of 1MiB files, store, sha-256" zip_sha "$W/src1m" -0 --compress store --hash sha-256
echo "lower machine limit: $(awk "BEGIN{print ($SHA<$DISK?$SHA:$DISK)}") MB/s"
run_pair "200,000 files of 4 KiB, store, sha-256" zip_sha "$W/src4k" -0 --compress store --hash sha-256
run_pair "Go sources (text), deflate level 6" zip_only "$W/text" -6 --compress deflate --hash sha-256
