#!/bin/sh
# rsdump's whole loop on the bundled example tree (testdata/example), on this
# machine, over HTTP on 127.0.0.1: pack the tree, serve it, sync a copy,
# change the tree, pack the changes, sync again, verify, and compare the copy
# with the tree after each sync. Needs Go; nothing else.
#
#   examples/loop.sh [WORKDIR]     (PORT=8089 by default)
set -eu
cd "$(dirname "$0")/.."
port=${PORT:-8089}
work=${1:-$(mktemp -d "${TMPDIR:-/tmp}/rsdump-example.XXXXXX")}
url=http://127.0.0.1:$port
mkdir -p "$work"
run() { echo "\$ $*" | sed "s|$work|WORK|g"; "$@"; }

go build -o "$work/rsdump" ./cmd/rsdump
rsdump="$work/rsdump"
rm -rf "$work/src" "$work/out" "$work/copy"
cp -R testdata/example "$work/src"

echo "== Source: pack the tree into a Resource Dump, and serve it"
run "$rsdump" pack "$work/src" --base-url "$url/data/" --dump-url "$url/" -o "$work/out" --quiet
"$rsdump" serve "$work/out" --addr "127.0.0.1:$port" --base-url "$url/data/" --dump-url "$url/" --resources "$work/src" 2>"$work/serve.log" &
server=$!
trap 'kill $server 2>/dev/null' EXIT INT TERM
i=0
until "$rsdump" verify --quiet "$url/resourcedump.xml" >/dev/null 2>&1; do
	i=$((i + 1))
	if [ $i -gt 100 ]; then cat "$work/serve.log"; echo "the server did not start (is port $port free? PORT=N picks another)"; exit 1; fi
	sleep 0.1
done

echo "== Destination: sync a copy, from the Source's address alone"
run "$rsdump" sync "$url/" --dest "$work/copy"
run diff -r -x .rsdump "$work/src" "$work/copy" && echo "the copy is exact"

echo "== Source: change, add and delete files; ship only what changed"
echo "a new line" >>"$work/src/notes/a.txt"
echo "a new file" >"$work/src/notes/new.txt"
rm "$work/src/empty.txt"
run "$rsdump" pack --changes "$work/src" --base-url "$url/data/" --dump-url "$url/" -o "$work/out" --quiet

echo "== Destination: sync again (the Source it records), and verify what the Source publishes"
run "$rsdump" sync --dest "$work/copy"
run diff -r -x .rsdump "$work/src" "$work/copy" && echo "the copy is exact again"
run "$rsdump" verify "$url/resourcedump.xml" "$url/changedump.xml"
echo "done: the tree, the dump and the copy are in $work"
