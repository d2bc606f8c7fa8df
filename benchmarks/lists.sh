#!/usr/bin/env bash
# issue 26, point 4: rsdump sync of a Source that publishes lists only (a
# Resource List, no dumps) against the other ways to fetch the same
# resources, side by side, medians of RUNS runs (the order rotates):
#   sync    rsdump sync http://127.0.0.1:PORT/ (discovery through the
#           Source Description, then every resource of the Resource List
#           fetched from its own URI, checked against its length and
#           sha-256, staged and committed)
#   sync-h1 the same with --http1.1: 16 kept-alive HTTP/1.1 connections,
#           where sync takes up serve's h2c (128 streams of one connection)
#   aria2c  aria2c -j16 -i LIST (Debian's aria2, its defaults: keep-alive,
#           no hash checked) on the same URLs, each to its path
#   resync  resync-sync --baseline (resync 2.0.2 from
#           ../shared/peers/resync-src, its defaults) on the same Resource
#           List, every resource (about a minute; with RTT, 2,000 by
#           default: it makes 22 a second at 20 ms); SUB=N gives it the
#           first N resources only (their list served from 127.0.0.3, so
#           --noauth), for short runs: its rate is then lower, its start
#           (Python, the list) weighing on fewer resources, so compare
#           only runs of the same SUB
# Every server is one rsdump serve --resources of the tree (the pack's
# output with its Resource Dump removed and its Capability List naming the
# Resource List alone). Data: FILES random files of SIZE bytes (default
# 100,000 x 2,048) from benchmarks/lib.sh's generator. Each run starts from
# an empty destination, page cache warm (the resources are small and
# served from memory either way), nothing left to write back by the run
# before (sync(1) first: aria2c and resync leave 100,000 dirty files that
# the next run's syncfs would otherwise write). Wall, CPU (user+sys of the client) and
# peak RSS from GNU time; rate = resources / wall; server CPU is what the
# rsdump serve processes used meanwhile (/proc).
# RTT=20ms puts the server behind benchmarks/wan, as in sync.sh.
# RSDUMP_BIN=PATH measures that build (its serve and its sync) instead of
# building this tree: the code before, in a session of its own.
# BEFORE=PATH adds the command "before": that build's sync against that
# build's serve of the same lists (their URLs on 127.0.0.4), in the same
# rounds as the others, so that the code before and after are measured
# under the same load (loopback only).
# Usage: benchmarks/lists.sh [RUNS]   (FILES, SIZE, SUB, RTT, CMDS, RSDUMP_BIN; data in
#   $BENCH_DIR, default /tmp/rsdump-bench-lists; PORT default 18750)
# Needs: go, python3 with resync's modules (.ci/run), aria2c, GNU time.
set -euo pipefail
RUNS=${1:-3}
FILES=${FILES:-100000}
SIZE=${SIZE:-2048}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
W=${BENCH_DIR:-/tmp/rsdump-bench-lists}
PORT=${PORT:-18750}
PEER=${PEER:-$ROOT/../shared/peers/resync-src}
. "$ROOT/benchmarks/lib.sh"
mkdir -p "$W"
cd "$ROOT"
if [ -n "${RSDUMP_BIN:-}" ]; then
  cp "$RSDUMP_BIN" "$W/rsdump"
  REV="RSDUMP_BIN=$RSDUMP_BIN"
else
  go build -o "$W/rsdump" ./cmd/rsdump
  REV="$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- . ':!benchmarks' || echo +dirty)"
fi
go build -o "$W/wan" ./benchmarks/wan

TREE="$W/tree-$FILES-$SIZE"
gen "$TREE" "$FILES" "$SIZE"
A="127.0.0.1:$PORT"
RTT=${RTT:-0}
# resync on every resource on loopback; behind RTT (22 resources/s at
# 20 ms) on the first 2,000, or it would take over an hour.
if [ "$RTT" = 0 ]; then SUB=${SUB:-$FILES}; else SUB=${SUB:-2000}; fi
if [ "$RTT" = 0 ]; then SA_="$A"; else SA_="127.0.0.1:$((PORT + 2))"; fi
OUT="$W/lists-$FILES-$SIZE-$PORT"
if [ ! -f "$OUT/resourcelist.xml" ]; then
  rm -rf "$OUT" "$OUT.sub" "$TREE.sub"
  "$W/rsdump" pack "$TREE" -o "$OUT" --quiet --compress store --hash sha-256 \
    --base-url "http://$A/res/" --dump-url "http://$A/dump/" --source-description
  # Lists only: no dump, and a Capability List that names none.
  rm -f "$OUT"/resourcedump*
  sed -i '/capability="resourcedump"/d' "$OUT/capabilitylist.xml"
fi
if [ "$SUB" -lt "$FILES" ] && [ ! -f "$OUT/subset-$SUB.xml" ]; then
  # resync's subset: the first SUB files, packed alone (same base URL).
  rm -rf "$TREE.sub" "$OUT.sub"; mkdir -p "$TREE.sub"
  (cd "$TREE" && find . -type f | sort | sed -n "1,${SUB}p" | xargs cp -l --parents -t "$TREE.sub")
  "$W/rsdump" pack "$TREE.sub" -o "$OUT.sub" --quiet --compress store --hash sha-256 \
    --base-url "http://$A/res/" --dump-url "http://$A/dump/"
  cp "$OUT.sub/resourcelist.xml" "$OUT/subset-$SUB.xml"
fi
BEFORE=${BEFORE:-}
[ -n "$BEFORE" ] && [ "$RTT" != 0 ] && { echo "BEFORE is for RTT=0 only" >&2; exit 1; }
AB="127.0.0.4:$PORT"
if [ -n "$BEFORE" ]; then
  # The same documents, their URLs on the before server's address.
  rm -rf "$OUT.before"; cp -r "$OUT" "$OUT.before"
  grep -rl --null "127.0.0.1:$PORT" "$OUT.before" | xargs -0 sed -i "s|127\.0\.0\.1:$PORT|$AB|g"
fi
SUBDIR="$W/subset-$SUB"; rm -rf "$SUBDIR"; mkdir -p "$SUBDIR"
[ "$SUB" -lt "$FILES" ] && cp "$OUT/subset-$SUB.xml" "$SUBDIR/resourcelist.xml"
LIST="$W/aria2-$FILES-$SIZE-$PORT.list"
[ -s "$LIST" ] || (cd "$TREE" && find . -type f | sort | sed 's|^\./||' | awk -v a="$A" '{print "http://" a "/res/" $0 "\n  out=" $0}') > "$LIST"
grep -q resourcedump "$OUT/capabilitylist.xml" && { echo "the Capability List still names a dump" >&2; exit 1; }

"$W/rsdump" serve "$OUT" -q --addr "$SA_" --base-url "http://$A/res/" --dump-url "http://$A/dump/" --resources "$TREE" &
SA=$!
SS=
if [ "$SUB" -lt "$FILES" ]; then
  # The subset's list alone, for resync (its resources are on the server above).
  "$W/rsdump" serve "$SUBDIR" -q --addr "127.0.0.3:$PORT" --base-url "http://127.0.0.3:$PORT/res/" --dump-url "http://127.0.0.3:$PORT/dump/" &
  SS=$!
fi
SW=
SB=
if [ -n "$BEFORE" ]; then
  "$BEFORE" serve "$OUT.before" -q --addr "$AB" --base-url "http://$AB/res/" --dump-url "http://$AB/dump/" --resources "$TREE" &
  SB=$!
fi
if [ "$RTT" != 0 ]; then
  "$W/wan" -rtt "$RTT" -map "$A=$SA_" &
  SW=$!
fi
trap 'kill $SA $SS $SW $SB 2>/dev/null; rm -rf "$W/dst" "$W/work" "$W/trash"' EXIT
sleep 0.5
for p in $SA $SS $SW $SB; do kill -0 "$p" || { echo "a server did not start" >&2; exit 1; }; done

cmd() {
  fresh "$W"
  case $1 in
    sync) echo "$W/rsdump sync http://$A/ --dest $W/dst -q" ;;
    sync-h1) echo "$W/rsdump sync http://$A/ --dest $W/dst -q --http1.1" ;;
    before) echo "$BEFORE sync http://$AB/ --dest $W/dst -q" ;;
    aria2c) echo "aria2c -j16 -q -d $W/dst -i $LIST" ;;
    resync)
      if [ "$SUB" -lt "$FILES" ]; then
        echo "env PYTHONPATH=$PEER /usr/bin/python3 $PEER/resync-sync --baseline --noauth --sitemap http://127.0.0.3:$PORT/dump/resourcelist.xml http://$A/res/=$W/dst"
      else
        echo "env PYTHONPATH=$PEER /usr/bin/python3 $PEER/resync-sync --baseline --sitemap http://$A/dump/resourcelist.xml http://$A/res/=$W/dst"
      fi ;;
  esac
}
count() { case $1 in resync) echo "$SUB" ;; *) echo "$FILES" ;; esac; }
SERVER=server
# server_cpu: the CPU seconds (user+sys) the rsdump serve processes have used.
server_cpu() { cat "/proc/$SA/stat" ${SS:+"/proc/$SS/stat"} ${SB:+"/proc/$SB/stat"} | awk -v hz="$(getconf CLK_TCK)" '{t += $14 + $15} END {printf "%.2f", t / hz}'; }

echo "machine: $(nproc) cores, $(go version | cut -d' ' -f3); rsdump $REV;" \
  "data: $FILES files x $SIZE B, resync on $SUB of them; RTT $RTT;" \
  "$(date -u '+%Y-%m-%d %H:%M UTC'), load $(cut -d' ' -f1-3 /proc/loadavg)"
printf 'run\tcommand\tresources\twall\tcpu\trss_kb\trate\tload1\tserver_cpu\n' > "$W/results.tsv"
CMDS=(${CMDS:-sync aria2c resync})
rounds "$RUNS" "${CMDS[@]}"
echo "end $(date -u '+%H:%M UTC'), load $(cut -d' ' -f1-3 /proc/loadavg)"
cp "$W/results.tsv" "$W/results-$FILES-rtt$RTT${RSDUMP_BIN:+-bin}-$(date -u +%Y%m%dT%H%M).tsv"

list_table
