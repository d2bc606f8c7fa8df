#!/usr/bin/env bash
# Change Dump benchmark (issue 12): on a 100,000-file tree with 1% of files
# changed, `rsdump pack --changes` against a full `rsdump pack` of the same
# tree, and against `resync-build --write-changelist --reference OLD.xml`
# (resync 2.0.2, ../shared/peers/resync-src), medians of RUNS runs.
# Each run: full pack (timed) and resync's reference resource list (not
# timed) of the tree; then 1,000 files (a different 1% each run) get new
# content and a new mtime; then `pack --changes` and resync's change list,
# each timed on that same changed tree.
# Usage: benchmarks/changes.sh [RUNS] [FILES] [SIZE]
#   SIZE: bytes per file (default 4096), or mixMEAN for files of mixed
#   sizes around MEAN bytes (genmixed in lib.sh)
#   (data goes to $BENCH_DIR, default /tmp/rsdump-bench)
# Needs: go, python3 with python3-dateutil python3-defusedxml python3-requests,
# GNU time (/usr/bin/time).
set -euo pipefail
RUNS=${1:-5}
FILES=${2:-100000}
SIZE=${3:-4096}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
W=${BENCH_DIR:-/tmp/rsdump-bench}
PEER=${RESYNC_PEER:-$ROOT/../shared/peers/resync-src}
mkdir -p "$W"
cd "$ROOT"
go build -o "$W/rsdump" ./cmd/rsdump
RSDUMP="$W/rsdump"
. "$ROOT/benchmarks/lib.sh"
case $SIZE in
mix*) SRC="$W/mix$FILES-${SIZE#mix}"; genmixed "$SRC" "$FILES" "${SIZE#mix}" ;;
*) SRC="$W/chg$FILES"; gen "$SRC" "$FILES" "$SIZE" ;;
esac
BASE=http://127.0.0.1/rs/

secs() { # secs CMD ARGS...: wall seconds; peak RSS KB to $W/rss
  /usr/bin/time -f "%e %M" -o "$W/time" "$@" >/dev/null 2>"$W/stderr" || { cat "$W/stderr" >&2; exit 1; }
  read -r s k < "$W/time"; echo "$k" > "$W/rss"; echo "$s"
}

# change RUN: new content and mtime for every 100th file, from offset RUN.
change() {
  python3 - "$SRC" "$1" <<'PY'
import os, sys, time
d, off = sys.argv[1], int(sys.argv[2])
names = sorted(os.path.join(r, f) for r, _, fs in os.walk(d) for f in fs)
now = time.time()
for p in names[off % 100::100]:
    size = os.path.getsize(p)
    with open(p, 'wb') as f:
        f.write(os.urandom(size))
    os.utime(p, (now, now))
PY
}

resync() { PYTHONPATH="$PEER" /usr/bin/python3 "$PEER/$1" "${@:2}"; }

echo "machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), $(go version | cut -d' ' -f3)"
echo "tree: $FILES files of $SIZE bytes ($(du -sh "$SRC" | cut -f1)), 1% changed per run"
full=(); chg=(); rs=(); rssfull=(); rsschg=()
for i in $(seq "$RUNS"); do
  rm -rf "$W/chgout"
  full+=("$(secs "$RSDUMP" pack "$SRC" --base-url "$BASE" -o "$W/chgout" --quiet)"); rssfull+=("$(cat "$W/rss")")
  # One file past 50,000 entries: resync writes an index only where a
  # mapping gives it a URI, and this reference is never published.
  resync resync-build --write-resourcelist --max-sitemap-entries $((FILES + 1)) --outfile "$W/old.xml" "$BASE=$SRC" >/dev/null 2>"$W/stderr" || { cat "$W/stderr" >&2; exit 1; }
  sleep 0.01 # mtimes of the changes after the dump's at
  change "$i"
  chg+=("$(secs "$RSDUMP" pack --changes "$SRC" --base-url "$BASE" -o "$W/chgout" --quiet)"); rsschg+=("$(cat "$W/rss")")
  rs+=("$(secs env PYTHONPATH="$PEER" /usr/bin/python3 "$PEER/resync-build" --write-changelist --reference "$W/old.xml" --outfile "$W/cl.xml" "$BASE=$SRC")")
  n=$(cat "$W"/chgout/changelist-part*.xml | grep -c '<url>' || true); m=$(grep -c '<url>' "$W/cl.xml" || true)
  echo "run $i: full ${full[-1]}s, --changes ${chg[-1]}s ($n changes), resync ${rs[-1]}s ($m changes)"
done
F=$(printf '%s\n' "${full[@]}" | median); C=$(printf '%s\n' "${chg[@]}" | median); R=$(printf '%s\n' "${rs[@]}" | median)
echo "medians: full pack ${F}s (peak RSS $(printf '%s\n' "${rssfull[@]}" | median) KB), pack --changes ${C}s (peak RSS $(printf '%s\n' "${rsschg[@]}" | median) KB), resync-build --write-changelist ${R}s"
echo "pack --changes / full pack: $(awk "BEGIN{printf \"%.1f%%\", 100*$C/$F}") (target < 15%); resync / pack --changes: $(awk "BEGIN{printf \"%.1fx\", $R/$C}") (target >= 5x)"
