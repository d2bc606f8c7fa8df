#!/usr/bin/env bash
# Before/after benchmark: the rsdump of a BEFORE commit against the current
# tree, side by side in one run on the same data, the two builds alternating
# run by run (which goes first alternates too), medians of RUNS runs, ratios
# after/before. For each of two data sets,
#   big:   BIG_FILES random files of 1 MiB (default 1,024: 1 GiB), and
#   small: SMALL_FILES random files of 4 KiB (default 50,000: 195 MiB),
# both from the generator of pack.sh (benchmarks/lib.sh), it times:
#   pack        rsdump pack --compress store --hash sha-256
#   pack-ml     the same with --metalink --mirror (one .meta4 per package)
#   verify      rsdump verify of the dump document
#   unpack      rsdump unpack of the dump document into a fresh directory,
#               with pack's --base-url
#   get         rsdump get of the packages' .meta4 files from two loopback
#               mirrors (benchmarks/fileserve on 127.0.0.1 and 127.0.0.2)
# Each build verifies, unpacks and gets the dump its own pack made (packed
# once, untimed, before the runs). Every command runs with a cold page cache
# (sync; echo 3 > /proc/sys/vm/drop_caches) when that is allowed (root),
# otherwise warm; the script says which. Wall, CPU (user+sys) and peak RSS
# come from GNU time.
# Usage: benchmarks/compare.sh [RUNS]   (BEFORE=commit, default 7f827e1;
#   data in $BENCH_DIR, default /tmp/rsdump-bench-cmp, about 3.5 GB; PORT,
#   default 18490; DROP_CACHES=0 to keep the cache warm; the raw rows go to
#   $W/results-DATE.tsv)
# Needs: go, git, python3, GNU time (/usr/bin/time).
set -euo pipefail
RUNS=${1:-5}
BEFORE=${BEFORE:-7f827e1}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
W=${BENCH_DIR:-/tmp/rsdump-bench-cmp}
PORT=${PORT:-18490}
BIG_FILES=${BIG_FILES:-1024}
SMALL_FILES=${SMALL_FILES:-50000}
. "$ROOT/benchmarks/lib.sh"
mkdir -p "$W/before" "$W/after"
cd "$ROOT"

# The two builds: BEFORE from a git archive in a temporary directory, after from this tree.
rm -rf "$W/before-src"; mkdir -p "$W/before-src"
git archive "$BEFORE" | tar -x -C "$W/before-src"
(cd "$W/before-src" && go build -o "$W/before/rsdump" ./cmd/rsdump)
rm -rf "$W/before-src"
go build -o "$W/after/rsdump" ./cmd/rsdump
go build -o "$W/fileserve" ./benchmarks/fileserve
AFTER_REV="$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- . ':!benchmarks' || echo +dirty)"

gen "$W/big" "$BIG_FILES" 1048576
gen "$W/small" "$SMALL_FILES" 4096

# The mirrors: $W/srv/VARIANT/DATA/ holds the dump that build packed.
mkdir -p "$W/srv"
"$W/fileserve" -dir "$W/srv" -addr "127.0.0.1:$PORT,127.0.0.2:$PORT" &
SRV=$!
trap 'kill "$SRV" 2>/dev/null; rm -rf "$W/out" "$W/dst" "$W/got"' EXIT
base() { echo "http://127.0.0.1:$PORT/$1/$2/"; }   # base VARIANT DATA
mirror() { echo "http://127.0.0.2:$PORT/$1/$2/"; } # mirror VARIANT DATA
PACK=(--quiet --compress store --hash sha-256)

for v in before after; do
  for d in big small; do
    rm -rf "$W/srv/$v/$d"
    "$W/$v/rsdump" pack "$W/$d" --base-url "$(base $v $d)" -o "$W/srv/$v/$d" "${PACK[@]}" \
      --metalink --mirror "$(mirror $v $d)"
  done
done
sleep 0.2; kill -0 "$SRV" # the server is up

DROP=${DROP_CACHES:-1}
if [ "$DROP" = 1 ] && { sync; echo 3 > /proc/sys/vm/drop_caches; } 2>/dev/null; then
  CACHE=cold
else
  DROP=0; CACHE=warm
fi

# cmd VARIANT DATA COMMAND: prints the command line to time, after clearing its output.
cmd() {
  local v=$1 d=$2 bin="$W/$1/rsdump" dump="$W/srv/$1/$2"
  rm -rf "$W/out" "$W/dst" "$W/got"
  case $3 in
    pack) echo "$bin pack $W/$d --base-url $(base $v $d) -o $W/out ${PACK[*]}" ;;
    pack-ml) echo "$bin pack $W/$d --base-url $(base $v $d) -o $W/out ${PACK[*]} --metalink --mirror $(mirror $v $d)" ;;
    verify) echo "$bin verify --quiet $dump/resourcedump.xml" ;;
    unpack) echo "$bin unpack --quiet $dump/resourcedump.xml --dest $W/dst --base-url $(base $v $d)" ;;
    get) echo "$bin get $(echo "$dump"/*.meta4) -o $W/got -q" ;;
  esac
}
# timed VARIANT DATA COMMAND: one run; appends a line to $W/results.tsv.
timed() {
  local line; line=$(cmd "$@")
  sync; [ "$DROP" = 1 ] && echo 3 > /proc/sys/vm/drop_caches
  # shellcheck disable=SC2086
  if ! /usr/bin/time -f '%e %U %S %M' -o "$W/time" $line >/dev/null 2>"$W/stderr"; then
    echo "FAILED: $line" >&2; cat "$W/stderr" >&2; exit 1
  fi
  local s u y k; read -r s u y k < "$W/time"
  printf '%s\t%s\t%s-%s\t%s\t%.2f\t%s\t%s\n' "$RUN" "$1" "$2" "$3" "$s" "$(awk "BEGIN{print $u+$y}")" "$k" \
    "$(cut -d' ' -f1 /proc/loadavg)" >> "$W/results.tsv"
  printf '  %-6s %-14s %6.2f s wall %6.2f s CPU %7d KB\n' "$1" "$2-$3" "$s" "$(awk "BEGIN{print $u+$y}")" "$k"
}

echo "machine: $(nproc) cores, $(go version | cut -d' ' -f3); before $BEFORE, after $AFTER_REV;" \
  "data: big $BIG_FILES x 1 MiB ($(du -sh --apparent-size "$W/big" | cut -f1)), small $SMALL_FILES x 4 KiB;" \
  "$CACHE page cache; $(date -u '+%Y-%m-%d %H:%M UTC'), load $(cut -d' ' -f1-3 /proc/loadavg)"
printf 'run\tvariant\tcommand\twall\tcpu\trss_kb\tload1\n' > "$W/results.tsv"
for RUN in $(seq "$RUNS"); do
  if [ $((RUN % 2)) -eq 1 ]; then order=(before after); else order=(after before); fi
  echo "run $RUN (${order[0]} first), load $(cut -d' ' -f1-3 /proc/loadavg)"
  for d in big small; do
    for c in pack pack-ml verify unpack get; do
      for v in "${order[@]}"; do timed "$v" "$d" "$c"; done
    done
  done
done
echo "end $(date -u '+%H:%M UTC'), load $(cut -d' ' -f1-3 /proc/loadavg)"
cp "$W/results.tsv" "$W/results-$(date -u +%Y%m%dT%H%M).tsv"

python3 - "$W/results.tsv" <<'PY'
import csv, statistics as st, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter='\t'))
cmds = list(dict.fromkeys(r['command'] for r in rows))
print('| command | wall before | wall after | wall ratio | pairs slower | CPU before | CPU after | CPU ratio | RSS before | RSS after |')
print('| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |')
for c in cmds:
    v = {x: {r['run']: r for r in rows if r['command'] == c and r['variant'] == x} for x in ('before', 'after')}
    med = lambda x, k: st.median(float(r[k]) for r in v[x].values())
    slower = sum(float(v['after'][n]['wall']) > float(v['before'][n]['wall']) for n in v['after'] if n in v['before'])
    print(f"| {c} | {med('before','wall'):.2f} s | {med('after','wall'):.2f} s | {med('after','wall')/med('before','wall'):.3f} | "
          f"{slower} of {len(v['after'])} | {med('before','cpu'):.2f} s | {med('after','cpu'):.2f} s | "
          f"{med('after','cpu')/med('before','cpu'):.3f} | {med('before','rss_kb')/1024:.0f} MB | {med('after','rss_kb')/1024:.0f} MB |")
print()
for c in cmds:
    for x in ('before', 'after'):
        print(f"{c} {x} wall: " + ' '.join(r['wall'] for r in rows if r['command'] == c and r['variant'] == x))
PY
