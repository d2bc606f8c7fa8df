#!/usr/bin/env bash
# History benchmark (issue 26): does `rsdump pack --changes`, run from cron
# for years, stay at the cost of one run?
#
#   benchmarks/history.sh gens [GENERATIONS] [FILES]
#     A tree of FILES small files (default 50,000; gen_small in lib.sh),
#     packed once, then GENERATIONS (default 1,000) runs of pack --changes,
#     each after 0.1% of the files changed (80% updated, 10% created, 10%
#     deleted). Each run's wall, user and system CPU seconds and
#     peak RSS, the bytes of the Source's documents (every .xml: indexes,
#     per-run lists and dumps, manifests, Resource List, Capability List)
#     and of all its output, one line per run, to
#     benchmarks/history-DATE-gens.tsv (or $OUT).
#   benchmarks/history.sh ratio [RUNS] [FILES] [SIZE]
#     pack --changes after 1% of FILES files (default 100,000 of 4,096
#     bytes) changed, against a full pack of the same tree, medians of RUNS
#     (default 5) runs, each from a fresh full pack, with both runs' peak
#     RSS; to benchmarks/history-DATE-ratio.tsv (or $OUT).
#
# RSDUMP_BIN=PATH measures that build instead of building this tree (the
# code before, for a side-by-side figure).
# Data goes to $BENCH_DIR (default /tmp/rsdump-bench). Run it with nice on a
# shared machine; the medians, not single runs, are the figures.
# Needs: go, python3, GNU time (/usr/bin/time).
set -euo pipefail
MODE=${1:-gens}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
W=${BENCH_DIR:-/tmp/rsdump-bench}
mkdir -p "$W"
cd "$ROOT"
# RSDUMP_BIN: another build to measure (the code before, say).
if [ -n "${RSDUMP_BIN:-}" ]; then
  RSDUMP=$RSDUMP_BIN
else
  go build -o "$W/rsdump" ./cmd/rsdump
  RSDUMP="$W/rsdump"
fi
. "$ROOT/benchmarks/lib.sh"
BASE=http://127.0.0.1/rs/
DAY=$(date -u +%Y-%m-%d)

# timed CMD ARGS...: "wall user sys rssKB" of the command.
timed() {
  /usr/bin/time -f "%e %U %S %M" -o "$W/time" "$@" >/dev/null 2>"$W/stderr" || { cat "$W/stderr" >&2; exit 1; }
  cat "$W/time"
}

# change DIR RUN PERMILLE: PERMILLE of every 1,000 files (sorted), chosen
# by RUN so that each run changes others: of every 10 of them, 8 get new
# content and a new mtime, one is deleted, and one gets a new sibling.
# PERMILLE 10 is 1%.
change() {
  python3 - "$1" "$2" "$3" <<'PY'
import os, sys, time
d, run, per = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
names = sorted(os.path.join(r, f) for r, _, fs in os.walk(d) for f in fs)
now = time.time()
step = 1000 // per
picked = names[(run * 7) % step::step]
for i, p in enumerate(picked):
    if i % 10 == 9:
        os.remove(p)
        continue
    if i % 10 == 8:
        p = os.path.join(os.path.dirname(p), 'n%07d-%d.txt' % (run, i))
    with open(p, 'wb') as f:
        f.write(b'version of run %d: %s\n' % (run, os.urandom(8).hex().encode()))
    os.utime(p, (now, now))
PY
}

# churn DIR FILES RUN: 0.1% of the FILES files gen_small wrote, found by
# their names (no walk of the tree): every 1,000th, from an offset RUN
# moves (37 is prime to 1,000, so no file is picked twice in 1,000 runs);
# of every 10 of them, 8 get new content and a new mtime, one is deleted,
# and one gets a new sibling.
churn() {
  python3 - "$1" "$2" "$3" <<'PY'
import os, sys, time
d, n, run = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
per = max(1, -(-n // 10000))
now = time.time()
for k, i in enumerate(range((run * 37) % 1000, n, 1000)):
    leaf = i // per
    sub = os.path.join(d, 'a%02d' % (leaf // 100 % 100), 'b%02d' % (leaf % 100))
    p = os.path.join(sub, 'r%07d.txt' % i)
    if k % 10 == 9:
        if os.path.exists(p):
            os.remove(p)
        continue
    if k % 10 == 8:
        p = os.path.join(sub, 'n%07d-%04d.txt' % (i, run))
    with open(p, 'wb') as f:
        f.write(b'version of run %d: %s\n' % (run, os.urandom(8).hex().encode()))
    os.utime(p, (now, now))
PY
}

echo "machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), $(go version | cut -d' ' -f3), ${RSDUMP_BIN:-$(git -C "$ROOT" rev-parse --short HEAD)}"
case $MODE in
gens)
  GENS=${2:-1000}
  FILES=${3:-50000}
  OUT=${OUT:-$ROOT/benchmarks/history-$DAY-gens.tsv}
  SRC="$W/hist$FILES"
  rm -rf "$SRC" "$W/histout"
  gen_small "$SRC" "$FILES"
  echo "tree: $FILES files ($(du -sh "$SRC" | cut -f1)), $GENS generations of 0.1% changes"
  "$RSDUMP" pack "$SRC" --base-url "$BASE" -o "$W/histout" --quiet
  printf 'run\twall_s\tuser_s\tsys_s\trss_kb\tdocs_bytes\toutput_bytes\tdoc_files\n' >"$OUT"
  for g in $(seq "$GENS"); do
    sleep 0.01 # mtimes of the changes after the run before
    churn "$SRC" "$FILES" "$g"
    read -r wall user sys rss < <(timed "$RSDUMP" pack --changes "$SRC" --base-url "$BASE" -o "$W/histout" --quiet)
    docs=$(find "$W/histout" -maxdepth 1 -name '*.xml' -printf '%s\n' | awk '{s+=$1} END {print s}')
    ndocs=$(find "$W/histout" -maxdepth 1 -name '*.xml' | wc -l)
    all=$(du -sb "$W/histout" | cut -f1)
    printf '%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$g" "$wall" "$user" "$sys" "$rss" "$docs" "$all" "$ndocs" >>"$OUT"
    case $g in 1 | 10 | 100 | 250 | 500 | 750 | 1000 | *000) echo "run $g: wall ${wall}s, cpu $(awk "BEGIN{print $user+$sys}")s, rss ${rss} KB, documents $docs bytes in $ndocs files" ;; esac
  done
  # Runs 10 and N as the medians of the 11 runs around them: single runs
  # on a shared machine jump by more than the 10% the issue allows.
  summary() { # summary FROM TO: median wall and cpu of those runs
    awk -F'\t' -v a="$1" -v b="$2" 'NR>1 && $1>=a && $1<=b {print $2 > "/dev/stderr"; print $3+$4}' "$OUT" 2>"$W/w" | median >"$W/c"
    echo "$(median <"$W/w") $(cat "$W/c")"
  }
  read -r w10 c10 < <(summary 5 15)
  read -r wN cN < <(summary $((GENS - 10)) "$GENS")
  echo "run 10 (median of runs 5-15): wall ${w10}s, cpu ${c10}s; run $GENS (median of runs $((GENS - 10))-$GENS): wall ${wN}s, cpu ${cN}s"
  echo "run $GENS / run 10: wall $(awk "BEGIN{printf \"%.3f\", $wN/$w10}"), cpu $(awk "BEGIN{printf \"%.3f\", $cN/$c10}") (target <= 1.10)"
  ;;
ratio)
  RUNS=${2:-5}
  FILES=${3:-100000}
  SIZE=${4:-4096}
  OUT=${OUT:-$ROOT/benchmarks/history-$DAY-ratio.tsv}
  SRC="$W/chg$FILES"
  gen "$SRC" "$FILES" "$SIZE"
  echo "tree: $FILES files of $SIZE bytes ($(du -sh "$SRC" | cut -f1)), 1% changed per run"
  printf 'run\tfull_wall_s\tfull_cpu_s\tchanges_wall_s\tchanges_cpu_s\tratio_wall\tfull_rss_kb\tchanges_rss_kb\n' >"$OUT"
  for i in $(seq "$RUNS"); do
    rm -rf "$W/ratioout"
    read -r fw fu fs fr < <(timed "$RSDUMP" pack "$SRC" --base-url "$BASE" -o "$W/ratioout" --quiet)
    sleep 0.01
    change "$SRC" "$i" 10 >/dev/null
    read -r cw cu cs cr < <(timed "$RSDUMP" pack --changes "$SRC" --base-url "$BASE" -o "$W/ratioout" --quiet)
    printf '%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$i" "$fw" "$(awk "BEGIN{print $fu+$fs}")" "$cw" "$(awk "BEGIN{print $cu+$cs}")" "$(awk "BEGIN{printf \"%.4f\", $cw/$fw}")" "$fr" "$cr" >>"$OUT"
    echo "run $i: full ${fw}s, --changes ${cw}s"
  done
  F=$(awk -F'\t' 'NR>1 {print $2}' "$OUT" | median); C=$(awk -F'\t' 'NR>1 {print $4}' "$OUT" | median)
  echo "medians: full pack ${F}s, pack --changes ${C}s: $(awk "BEGIN{printf \"%.1f%%\", 100*$C/$F}") (target <= 12%); peak RSS of --changes $(awk -F'\t' 'NR>1 {print $8}' "$OUT" | median) KB"
  ;;
*)
  echo "usage: $0 gens [GENERATIONS] [FILES] | ratio [RUNS] [FILES] [SIZE]" >&2
  exit 2
  ;;
esac
