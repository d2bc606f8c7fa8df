#!/usr/bin/env bash
# rsdump audit (issue 43) against sha256sum and hashdeep's audit mode, on
# the same files: FILES random files of SIZE bytes (default 64 of 32 MiB,
# 2 GiB), packed (stored) and unpacked by rsdump once per manifest hash
# set in HASHES (default "sha-256 md5,sha-256 sha-256,blake3"), so that
# each copy's written log carries those hashes. Then, RUNS times (default
# 5), the order rotating round by round, on a warm page cache:
#   sha256sum   sha256sum of every file (one process: xargs -0 sha256sum)
#   hashdeep    hashdeep -a -k KNOWN -r -l of the copy, the same hashes as
#               the copy's manifest where hashdeep has them (sha256; md5
#               and sha256; sha256 for a blake3 set), its threads default
#   rsdump-H    rsdump audit COPY --quiet, every hash of the written log
# Wall, CPU (user+sys), peak RSS from GNU time; medians; throughput of
# each against sha256sum's. SMALL=N also runs the three on a tree of N
# files of about 41 bytes (gen_small), with sha-256 (HASHES="" SMALL=N:
# those alone; peak RSS is the memory figure for N files).
# Usage: benchmarks/audit.sh [RUNS]   (data in $BENCH_DIR, default
#   /tmp/rsdump-bench-audit)
# Needs: go, python3, hashdeep, GNU time (/usr/bin/time).
set -euo pipefail
RUNS=${1:-5}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
W=${BENCH_DIR:-/tmp/rsdump-bench-audit}
FILES=${FILES:-64}
SIZE=${SIZE:-33554432}
HASHES=${HASHES-sha-256 md5,sha-256 sha-256,blake3}
SMALL=${SMALL:-}
BASE=http://127.0.0.1:1/audit/ # a name only: nothing is fetched
. "$ROOT/benchmarks/lib.sh"
mkdir -p "$W"
cd "$ROOT"
go build -o "$W/rsdump" ./cmd/rsdump
REV="$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- . ':!benchmarks' || echo +dirty)"

# copy NAME SRC HASHES: SRC packed and unpacked into $W/copy-NAME, whose
# written log carries HASHES; hashdeep's known file beside it.
copy() {
  local c="$W/copy-$1"
  if [ ! -f "$c/.rsdump/written.log" ]; then
    rm -rf "$c" "$W/dump-$1"
    "$W/rsdump" pack "$2" --base-url "$BASE" -o "$W/dump-$1" --compress store --hash "$3" --quiet >/dev/null
    "$W/rsdump" unpack "$W/dump-$1" --dest "$c" --base-url "$BASE" --quiet >/dev/null
    rm -rf "$W/dump-$1"
  fi
  [ -f "$W/known-$1" ] && return
  local algs=sha256
  [[ $3 == md5,* ]] && algs=md5,sha256
  echo "$algs" > "$W/algs-$1"
  (cd "$c" && hashdeep -c "$algs" -r -l $(top) > "$W/known-$1")
}

# top: the top-level entries of the current directory but rsdump's state
# directory, as ./NAME: what hashdeep hashes (audit mode fails on any file
# its known list lacks).
top() { find . -mindepth 1 -maxdepth 1 ! -name .rsdump | sort; }

[ -n "$HASHES" ] && gen "$W/src" "$FILES" "$SIZE"
TREES=()
for h in $HASHES; do copy "$h" "$W/src" "$h"; TREES+=("$h"); done # HASHES="" with SMALL: small files alone
if [ -n "$SMALL" ]; then gen_small "$W/small" "$SMALL"; copy small "$W/small" sha-256; fi

# cmd NAME: the command line of NAME (sha256sum:T, hashdeep:T, rsdump:T).
cmd() {
  local tool=${1%%:*} t=${1#*:} c="$W/copy-${1#*:}"
  case $tool in
    sha256sum) echo "bash -c 'cd $c && find . -path ./.rsdump -prune -o -type f -print0 | xargs -0 sha256sum >/dev/null'" ;;
    hashdeep) echo "bash -c 'cd $c && hashdeep -c $(cat "$W/algs-$t") -a -k $W/known-$t -r -l \$(find . -mindepth 1 -maxdepth 1 ! -name .rsdump) >/dev/null'" ;;
    rsdump) echo "$W/rsdump audit $c --quiet" ;;
  esac
}

timed() {
  local line; line=$(cmd "$1")
  if ! eval /usr/bin/time -f "'%e %U %S %M'" -o "$W/time" "$line" >/dev/null 2>"$W/stderr"; then
    echo "FAILED: $line" >&2; tail -20 "$W/stderr" >&2; exit 1
  fi
  local s u y k; read -r s u y k < "$W/time"
  printf '%s\t%s\t%s\t%.2f\t%s\t%s\n' "$RUN" "$1" "$s" "$(awk "BEGIN{print $u+$y}")" "$k" "$(cut -d' ' -f1 /proc/loadavg)" >> "$W/results.tsv"
  printf '  %-22s %8.2f s wall %8.2f s CPU %8d KB\n' "$1" "$s" "$(awk "BEGIN{print $u+$y}")" "$k"
}

echo "machine: $(nproc) cores, $(go version | cut -d' ' -f3); rsdump $REV; data:" \
  "$([ -n "$HASHES" ] && echo "$FILES files x $SIZE B") $([ -n "$SMALL" ] && echo "$SMALL small files"); warm page cache; $(date -u '+%Y-%m-%d %H:%M UTC'), load $(cut -d' ' -f1-3 /proc/loadavg)"
find "$W"/copy-* -type f -print0 | xargs -0 cat >/dev/null 2>&1 || true # warm
printf 'run\tcommand\twall\tcpu\trss_kb\tload1\n' > "$W/results.tsv"
CMDS=()
[ ${#TREES[@]} -gt 0 ] && CMDS+=(sha256sum:sha-256)
for t in "${TREES[@]}"; do CMDS+=("hashdeep:$t" "rsdump:$t"); done
[ -n "$SMALL" ] && CMDS+=(sha256sum:small hashdeep:small rsdump:small)
rounds "$RUNS" "${CMDS[@]}"
echo "end $(date -u '+%H:%M UTC'), load $(cut -d' ' -f1-3 /proc/loadavg)"

# Medians, and throughput against sha256sum's on the same tree.
med() { awk -F'\t' -v c="$1" -v f="$2" '$2 == c {print $f}' "$W/results.tsv" | median; }
printf '%-22s %9s %9s %9s %10s %s\n' command wall_s cpu_s rss_MiB MB/s vs_sha256sum
for c in "${CMDS[@]}"; do
  t=${c#*:}; [ "$t" = small ] && ref=sha256sum:small || ref=sha256sum:sha-256
  bytes=$(du -sb --exclude=.rsdump "$W/copy-$t" | cut -f1)
  w=$(med "$c" 3); r=$(med "$ref" 3)
  printf '%-22s %9.2f %9.2f %9.1f %10.1f %.2fx\n' "$c" "$w" "$(med "$c" 4)" "$(awk "BEGIN{print $(med "$c" 5)/1024}")" \
    "$(awk "BEGIN{print $bytes/1e6/$w}")" "$(awk "BEGIN{print $r/$w}")"
done
