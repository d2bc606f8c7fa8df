#!/usr/bin/env bash
# issue 40, point 2: a Source of lists only (a Resource List, no dump)
# published by nginx over HTTP/2 with TLS, behind benchmarks/wan (RTT,
# default 20 ms), fetched side by side, medians of RUNS runs (the order
# rotates):
#   sync    rsdump sync https://127.0.0.1:PORT/ (discovery, the Resource
#           List, every resource from its own URL over HTTP/2, checked
#           against its length and sha-256, staged and committed); the
#           test CA through SSL_CERT_FILE
#   before  the same with the build BEFORE=PATH (if given)
#   aria2c  aria2c -j16 -i LIST --ca-certificate (HTTP/1.1 over TLS, its
#           defaults otherwise, no hash checked) on the same URLs
#   resync  resync-sync --baseline (resync 2.0.2, python-requests: HTTP/1.1
#           over TLS, REQUESTS_CA_BUNDLE and SSL_CERT_FILE, a connection a resource) on the
#           first SUB resources (default 1,000 behind RTT: it makes about
#           15 a second at 20 ms; all of them at RTT=0), their own list
#           packed alone: compare rates, not walls
# nginx (Debian's, as a user runs it: `listen ... ssl http2`, sendfile,
# its default keep-alive) serves the pack output at / and the tree at
# /res/, with a self-signed certificate for 127.0.0.1 made by openssl.
# Data: FILES random files of SIZE bytes (default 10,000 x 2,048).
# Wall, CPU (user+sys of the client) and peak RSS from GNU time; rate =
# resources / wall; nginx's CPU over the run from /proc.
# Usage: benchmarks/nginx-lists.sh [RUNS]   (FILES, SIZE, RTT, CMDS,
#   BEFORE; data in $BENCH_DIR, default /tmp/rsdump-bench-nginx; PORT
#   default 18770)
# Needs: go, nginx, openssl, aria2c, python3 with resync's modules
# (.ci/run), GNU time.
set -euo pipefail
RUNS=${1:-3}
FILES=${FILES:-10000}
SIZE=${SIZE:-2048}
RTT=${RTT:-20ms}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
W=${BENCH_DIR:-/tmp/rsdump-bench-nginx}
PORT=${PORT:-18770}
PEER=${PEER:-$ROOT/../shared/peers/resync-src}
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
. "$ROOT/benchmarks/lib.sh"
mkdir -p "$W"
cd "$ROOT"
go build -o "$W/rsdump" ./cmd/rsdump
go build -o "$W/wan" ./benchmarks/wan
REV="$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- . ':!benchmarks' || echo +dirty)"

TREE="$W/tree-$FILES-$SIZE"
gen "$TREE" "$FILES" "$SIZE"
A="127.0.0.1:$PORT"
if [ "$RTT" = 0 ]; then SA_="$A"; else SA_="127.0.0.1:$((PORT + 2))"; fi
OUT="$W/lists-$FILES-$SIZE-$PORT"
if [ ! -f "$OUT/resourcelist.xml" ]; then
  rm -rf "$OUT"
  "$W/rsdump" pack "$TREE" -o "$OUT" --quiet --compress store --hash sha-256 \
    --base-url "https://$A/res/" --dump-url "https://$A/" --source-description
  rm -f "$OUT"/resourcedump*
  sed -i '/capability="resourcedump"/d' "$OUT/capabilitylist.xml"
fi
grep -q resourcedump "$OUT/capabilitylist.xml" && { echo "the Capability List still names a dump" >&2; exit 1; }
if [ "$RTT" = 0 ]; then SUB=${SUB:-$FILES}; else SUB=${SUB:-1000}; fi
if [ ! -f "$OUT/subset-$SUB.xml" ]; then
  # resync's subset: the first SUB files, packed alone (same base URL).
  rm -rf "$TREE.sub" "$OUT.sub"; mkdir -p "$TREE.sub"
  (cd "$TREE" && find . -type f | sort | sed -n "1,${SUB}p" | xargs cp -l --parents -t "$TREE.sub")
  "$W/rsdump" pack "$TREE.sub" -o "$OUT.sub" --quiet --compress store --hash sha-256 \
    --base-url "https://$A/res/" --dump-url "https://$A/"
  cp "$OUT.sub/resourcelist.xml" "$OUT/subset-$SUB.xml"
fi
LIST="$W/aria2-$FILES-$SIZE-$PORT.list"
[ -s "$LIST" ] || (cd "$TREE" && find . -type f | sort | sed 's|^\./||' | awk -v a="$A" '{print "https://" a "/res/" $0 "\n  out=" $0}') > "$LIST"

# The certificate, and nginx's prefix.
N="$W/nginx"
rm -rf "$N"; mkdir -p "$N"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
  -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 \
  -keyout "$N/key.pem" -out "$N/cert.pem" 2>/dev/null
USER_LINE=""
[ "$(id -u)" = 0 ] && USER_LINE="user root root;"
cat > "$N/nginx.conf" <<EOF
$USER_LINE
daemon off;
worker_processes 1;
pid $N/nginx.pid;
error_log $N/error.log warn;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path $N/body; proxy_temp_path $N/proxy; fastcgi_temp_path $N/fastcgi;
  uwsgi_temp_path $N/uwsgi; scgi_temp_path $N/scgi;
  types { application/xml xml; }
  default_type application/octet-stream;
  sendfile on;
  server {
    listen $SA_ ssl http2;
    ssl_certificate $N/cert.pem;
    ssl_certificate_key $N/key.pem;
    location /res/ { alias $TREE/; }
    location / { root $OUT; }
  }
}
EOF
"$NGINX" -p "$N" -c "$N/nginx.conf" -e "$N/error.log" &
SN=$!
SW=
if [ "$RTT" != 0 ]; then
  "$W/wan" -rtt "$RTT" -map "$A=$SA_" &
  SW=$!
fi
trap 'kill $SN $SW 2>/dev/null; rm -rf "$W/dst" "$W/work" "$W/trash"' EXIT
sleep 0.5
for p in $SN $SW; do kill -0 "$p" || { echo "a server did not start" >&2; exit 1; }; done

BEFORE=${BEFORE:-}
cmd() {
  fresh "$W"
  case $1 in
    sync) echo "env SSL_CERT_FILE=$N/cert.pem $W/rsdump sync https://$A/ --dest $W/dst -q" ;;
    before) echo "env SSL_CERT_FILE=$N/cert.pem $BEFORE sync https://$A/ --dest $W/dst -q" ;;
    aria2c) echo "aria2c -j16 -q --ca-certificate=$N/cert.pem -d $W/dst -i $LIST" ;;
    resync) echo "env REQUESTS_CA_BUNDLE=$N/cert.pem SSL_CERT_FILE=$N/cert.pem PYTHONPATH=$PEER /usr/bin/python3 $PEER/resync-sync --baseline --sitemap https://$A/subset-$SUB.xml https://$A/res/=$W/dst" ;;
  esac
}
count() { case $1 in resync) echo "$SUB" ;; *) echo "$FILES" ;; esac; }
SERVER=nginx
# server_cpu: the CPU seconds (user+sys) nginx's master and worker used.
server_cpu() { cat /proc/$SN/stat $(pgrep -P "$SN" | sed 's|.*|/proc/&/stat|') 2>/dev/null | awk -v hz="$(getconf CLK_TCK)" '{t += $14 + $15} END {printf "%.2f", t / hz}'; }

echo "machine: $(nproc) cores, $(go version | cut -d' ' -f3); rsdump $REV; $("$NGINX" -v 2>&1);" \
  "data: $FILES files x $SIZE B, resync on $SUB; RTT $RTT;" \
  "$(date -u '+%Y-%m-%d %H:%M UTC'), load $(cut -d' ' -f1-3 /proc/loadavg)"
printf 'run\tcommand\tresources\twall\tcpu\trss_kb\trate\tload1\tserver_cpu\n' > "$W/results.tsv"
DEFAULT_CMDS="sync aria2c resync"
[ -n "$BEFORE" ] && DEFAULT_CMDS="sync before aria2c resync"
CMDS=(${CMDS:-$DEFAULT_CMDS})
rounds "$RUNS" "${CMDS[@]}"
echo "end $(date -u '+%H:%M UTC'), load $(cut -d' ' -f1-3 /proc/loadavg)"
cp "$W/results.tsv" "$W/results-nginx-$FILES-rtt$RTT-$(date -u +%Y%m%dT%H%M).tsv"

list_table
