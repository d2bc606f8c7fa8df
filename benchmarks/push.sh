#!/usr/bin/env bash
# benchmarks/push.sh [RUNS] [FILES]: how long a change takes to reach a
# Destination that follows its Source (issue 27): rsdump serve --hub, a
# Destination running rsdump sync --follow --poll 1h, and RUNS times: 1% of
# FILES files of 4 KiB changed, pack --changes --hub --change-notification,
# and the time from the start of pack to the Destination's "synced" event,
# then to its tree equal to the Source's (diff -r). Medians; loopback only.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$ROOT/benchmarks/lib.sh"
RUNS=${1:-7}
FILES=${2:-1000}
W=${W:-/tmp/rsdump-bench-push}
PORT=${PORT:-18391}
mkdir -p "$W"
go build -o "$W/rsdump" "$ROOT/cmd/rsdump"
R="$W/rsdump"
rm -rf "$W/out" "$W/dest" "$W/src"
gen "$W/src" "$FILES" 4096
mkdir -p "$W/out"
BASE="http://127.0.0.1:$PORT/"
"$R" serve "$W/out" --addr "127.0.0.1:$PORT" --hub --quiet 2>"$W/serve.log" &
SERVE=$!
trap 'kill $SERVE $FOLLOW 2>/dev/null || true' EXIT
FOLLOW=
sleep 0.5
P=(--base-url "${BASE}data/" --dump-url "$BASE" -o "$W/out" --hub "${BASE}hub" --change-notification --quiet)
"$R" pack "$W/src" "${P[@]}"
"$R" sync "${BASE}capabilitylist.xml" --dest "$W/dest" --follow --poll 1h --json >"$W/events.json" 2>"$W/follow.err" &
FOLLOW=$!
for _ in $(seq 100); do [ "$(grep -c '"event":"subscribed"' "$W/events.json" || true)" -ge 2 ] && break; sleep 0.1; done
now() { date +%s.%N; }
: >"$W/event.s"; : >"$W/tree.s"; : >"$W/pack.s"
for i in $(seq "$RUNS"); do
  n=$(grep -c '"event":"synced"' "$W/events.json" || true)
  find "$W/src" -type f | sort | awk -v i="$i" 'NR % 100 == i % 100' | while read -r f; do echo "run $i" >>"$f"; done
  t0=$(now)
  "$R" pack --changes "$W/src" "${P[@]}"
  t1=$(now)
  while [ "$(grep -c '"event":"synced"' "$W/events.json" || true)" -le "$n" ]; do sleep 0.005; done
  t2=$(now)
  until diff -rq "$W/src" "$W/dest" --exclude=.rsdump >/dev/null; do sleep 0.005; done
  t3=$(now)
  awk -v a="$t0" -v b="$t1" 'BEGIN{print b-a}' >>"$W/pack.s"
  awk -v a="$t0" -v b="$t2" 'BEGIN{print b-a}' >>"$W/event.s"
  awk -v a="$t0" -v b="$t3" 'BEGIN{print b-a}' >>"$W/tree.s"
  echo "run $i: pack $(tail -1 "$W/pack.s") s, synced event $(tail -1 "$W/event.s") s, tree equal $(tail -1 "$W/tree.s") s after pack began"
done
grep -q '"event":"polling"' "$W/events.json" && echo "warning: the follower polled; a figure may not be the push's"
echo "medians of $RUNS runs ($FILES files, 1% changed): pack --changes $(median <"$W/pack.s") s; synced $(median <"$W/event.s") s; tree equal $(median <"$W/tree.s") s after pack began"
