#!/usr/bin/env bash
# What signing costs a Source and checking costs a Destination, side by
# side on one tree, medians of RUNS runs (the commands alternate, and which
# goes first rotates):
#   pack        rsdump pack TREE --metalink --source-description (sync.sh's
#               pack: stored, sha-256, two mirrors)
#   pack-sign   the same with --sign KEY (Ed25519, made by gpg): every
#               document's NAME.asc, every package's .meta4 <signature>
#   sync        rsdump sync http://127.0.0.1:PORT/ of the unsigned output
#   sync-trust  rsdump sync --trust KEY of the signed output (every
#               document's signature fetched and checked, the key pinned)
# Data: FILES random files of SIZE bytes (default sync.sh's 20,000 x
# 107,374: 2 GiB) from benchmarks/lib.sh's generator. Each run packs into,
# or syncs into, an empty directory; the page cache is dropped before each
# command when that is allowed (root), else warm. Wall and CPU (user+sys)
# from GNU time; the servers' CPU is not counted.
# Usage: benchmarks/signing.sh [RUNS]   (FILES, SIZE; data in $BENCH_DIR,
#   default /tmp/rsdump-bench-signing; PORT default 18760; DROP_CACHES=0
#   to keep the cache warm)
# Needs: go, gpg, GNU time (/usr/bin/time).
set -euo pipefail
RUNS=${1:-5}
FILES=${FILES:-20000}
SIZE=${SIZE:-107374}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
W=${BENCH_DIR:-/tmp/rsdump-bench-signing}
PORT=${PORT:-18760}
. "$ROOT/benchmarks/lib.sh"
mkdir -p "$W"
cd "$ROOT"
go build -o "$W/rsdump" ./cmd/rsdump
REV="$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- . ':!benchmarks' || echo +dirty)"
TREE="$W/tree-$FILES-$SIZE"
gen "$TREE" "$FILES" "$SIZE"

# A key made by gpg, as a Source's would be.
export GNUPGHOME="$W/gnupg"
if [ ! -f "$W/key.sec.asc" ]; then
  rm -rf "$GNUPGHOME"; mkdir -m 700 "$GNUPGHOME"
  gpg --batch --passphrase '' --quick-gen-key 'Bench <bench@example.org>' ed25519 sign never 2>/dev/null
  gpg --batch --pinentry-mode loopback --passphrase '' --armor --export-secret-keys bench@example.org > "$W/key.sec.asc"
  gpg --armor --export bench@example.org > "$W/key.pub.asc"
fi

A="127.0.0.1:$PORT" S="127.0.0.1:$((PORT + 1))"
pack_args() { # OUT ADDR
  echo "$W/rsdump pack $TREE -o $1 --quiet --compress store --hash sha-256 --base-url http://$2/res/ --dump-url http://$2/dump/ --source-description --metalink --mirror http://$2/dump/"
}
# The outputs the syncs read, packed once, untimed.
for v in plain signed; do
  addr=$A; [ $v = signed ] && addr=$S
  if [ ! -f "$W/src-$v-$FILES-$PORT/resourcedump.xml" ]; then
    rm -rf "$W/src-$v-$FILES-$PORT"
    extra=""; [ $v = signed ] && extra="--sign $W/key.sec.asc"
    # shellcheck disable=SC2046
    $(pack_args "$W/src-$v-$FILES-$PORT" "$addr") $extra
  fi
done
"$W/rsdump" serve "$W/src-plain-$FILES-$PORT" -q --addr "$A" --base-url "http://$A/res/" --dump-url "http://$A/dump/" &
SA=$!
"$W/rsdump" serve "$W/src-signed-$FILES-$PORT" -q --addr "$S" --base-url "http://$S/res/" --dump-url "http://$S/dump/" &
SS=$!
trap 'kill $SA $SS 2>/dev/null; gpgconf --kill gpg-agent 2>/dev/null; rm -rf "$W/dst" "$W/work" "$W/trash"' EXIT
sleep 0.5
for p in $SA $SS; do kill -0 "$p" || { echo "a server did not start (PORT=$PORT taken?)" >&2; exit 1; }; done

DROP=${DROP_CACHES:-1}
if [ "$DROP" = 1 ] && { sync; echo 3 > /proc/sys/vm/drop_caches; } 2>/dev/null; then CACHE=cold; else DROP=0; CACHE=warm; fi

cmd() {
  fresh "$W"
  case $1 in
    pack) echo "$(pack_args "$W/dst" "$A")" ;;
    pack-sign) echo "$(pack_args "$W/dst" "$A") --sign $W/key.sec.asc" ;;
    sync) echo "$W/rsdump sync http://$A/ --dest $W/dst -q" ;;
    sync-trust) echo "$W/rsdump sync http://$S/ --dest $W/dst -q --trust $W/key.pub.asc" ;;
  esac
}
timed() {
  local line; line=$(cmd "$1")
  sync; [ "$DROP" = 1 ] && echo 3 > /proc/sys/vm/drop_caches
  # shellcheck disable=SC2086
  if ! (cd "$W/work" && /usr/bin/time -f '%e %U %S %M' -o "$W/time" $line >/dev/null 2>"$W/stderr"); then
    echo "FAILED: $line" >&2; tail -20 "$W/stderr" >&2; exit 1
  fi
  case $1 in
    sync*) diff -r -q -x .rsdump "$TREE" "$W/dst" >/dev/null || { echo "FAILED: $1 left a tree that differs" >&2; exit 1; } ;;
    pack-sign) [ -f "$W/dst/resourcedump.xml.asc" ] || { echo "FAILED: pack --sign wrote no signature" >&2; exit 1; } ;;
  esac
  local s u y k; read -r s u y k < "$W/time"
  printf '%s\t%s\t%s\t%.2f\t%s\t%s\n' "$RUN" "$1" "$s" "$(awk "BEGIN{print $u+$y}")" "$k" "$(cut -d' ' -f1 /proc/loadavg)" >> "$W/results.tsv"
  printf '  %-10s %8.2f s wall %8.2f s CPU %8d KB\n' "$1" "$s" "$(awk "BEGIN{print $u+$y}")" "$k"
}

echo "machine: $(nproc) cores, $(go version | cut -d' ' -f3); rsdump $REV;" \
  "data: $FILES files x $SIZE B ($(du -sh --apparent-size "$TREE" | cut -f1)); $CACHE page cache;" \
  "$(date -u '+%Y-%m-%d %H:%M UTC'), load $(cut -d' ' -f1-3 /proc/loadavg)"
printf 'run\tcommand\twall\tcpu\trss_kb\tload1\n' > "$W/results.tsv"
rounds "$RUNS" pack pack-sign sync sync-trust
echo "end $(date -u '+%H:%M UTC'), load $(cut -d' ' -f1-3 /proc/loadavg)"
cp "$W/results.tsv" "$W/results-$FILES-$(date -u +%Y%m%dT%H%M).tsv"

python3 - "$W/results.tsv" <<'PY'
import csv, statistics as st, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter='\t'))
med = {c: (st.median(float(r['wall']) for r in rows if r['command'] == c),
           st.median(float(r['cpu']) for r in rows if r['command'] == c)) for c in ('pack', 'pack-sign', 'sync', 'sync-trust')}
print('| command | wall (median) | CPU (median) | wall, signed/unsigned | CPU, signed/unsigned |')
print('|---|---|---|---|---|')
for c, base in (('pack', 'pack'), ('pack-sign', 'pack'), ('sync', 'sync'), ('sync-trust', 'sync')):
    w, u = med[c]
    print(f'| {c} | {w:.2f} s | {u:.2f} s | {w/med[base][0]:.3f} | {u/med[base][1]:.3f} |')
PY
