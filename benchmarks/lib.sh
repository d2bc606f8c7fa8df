# Shared helpers of the benchmark scripts; source it: . "$ROOT/benchmarks/lib.sh"

# gen DIR COUNT SIZE_BYTES: COUNT files of SIZE_BYTES random bytes under DIR,
# 128 per directory (DIR/d0000/f000000.bin, ...); kept if DIR exists.
gen() {
  [ -d "$1" ] && return
  python3 - "$1.tmp" "$2" "$3" <<'PY'
import os, shutil, sys
d, n, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
shutil.rmtree(d, ignore_errors=True)
for i in range(n):
    sub = os.path.join(d, 'd%04d' % (i // 128))
    os.makedirs(sub, exist_ok=True)
    with open(os.path.join(sub, 'f%06d.bin' % i), 'wb') as f:
        f.write(os.urandom(size))
PY
  mv "$1.tmp" "$1"
}

# median: the median of the numbers on stdin, one a line.
median() { sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }

# genmixed DIR COUNT MEAN_BYTES: like gen, but of mixed sizes, exponentially
# distributed around MEAN_BYTES (seeded: the same tree every time), as a
# typical collection has many small files and a few large ones.
genmixed() {
  [ -d "$1" ] && return
  python3 - "$1.tmp" "$2" "$3" <<'PY'
import os, random, shutil, sys
d, n, mean = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
shutil.rmtree(d, ignore_errors=True)
rng = random.Random(12)
for i in range(n):
    sub = os.path.join(d, 'd%04d' % (i // 128))
    os.makedirs(sub, exist_ok=True)
    with open(os.path.join(sub, 'f%06d.bin' % i), 'wb') as f:
        f.write(os.urandom(int(rng.expovariate(1 / mean))))
PY
  mv "$1.tmp" "$1"
}

# gen_small DIR COUNT: COUNT files of about 41 bytes, all different, in
# 100 x 100 directories (DIR/a00/b00/r0000000.txt, ...); kept if DIR exists.
gen_small() {
  [ -d "$1" ] && return
  python3 - "$1.tmp" "$2" <<'PY'
import os, shutil, sys
d, n = sys.argv[1], int(sys.argv[2])
shutil.rmtree(d, ignore_errors=True)
per = max(1, -(-n // 10000))
for i in range(n):
    leaf = i // per
    sub = os.path.join(d, 'a%02d' % (leaf // 100 % 100), 'b%02d' % (leaf % 100))
    if i % per == 0:
        os.makedirs(sub, exist_ok=True)
    fd = os.open(os.path.join(sub, 'r%07d.txt' % i), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.write(fd, b'record %07d of the small-file benchmark\n' % i)
    os.close(fd)
PY
  mv "$1.tmp" "$1"
}

# fresh W: an empty destination W/dst (and W/work). The one a command wrote
# is moved aside to W/trash, not deleted: ext4 skips the inodes of files
# deleted moments before when it allocates new ones (recently_deleted,
# seen with perf), so the command right after a deletion of 100,000 files
# spent more kernel time finding inodes than doing its own work, whichever
# it was. The caller removes W/trash at exit.
fresh() {
  if [ -d "$1/dst" ]; then mkdir -p "$1/trash"; mv "$1/dst" "$1/trash/$(date +%s%N)"; fi
  rm -rf "$1/work"; mkdir -p "$1/dst" "$1/work"
}

# rounds RUNS CMD...: RUNS rounds of `timed CMD` (the caller's) for every
# command, the order rotating round by round, so that none always runs
# first or right after another; RUN is the round, for timed's rows.
rounds() {
  local n=$1 k c; shift
  local cmds=("$@") order
  for RUN in $(seq "$n"); do
    k=$(( (RUN - 1) % ${#cmds[@]} ))
    order=("${cmds[@]:$k}" "${cmds[@]:0:$k}")
    echo "run $RUN (${order[*]}), load $(cut -d' ' -f1-3 /proc/loadavg)"
    for c in "${order[@]}"; do timed "$c"; done
  done
}

# The list benchmarks (lists.sh, nginx-lists.sh) share their measuring:
# the caller defines cmd NAME (the command line, after `fresh`), count NAME
# (the files it must leave), server_cpu (the CPU seconds its servers have
# used) and SERVER (their name in the output), and sets W, TREE, FILES and
# SUB (resync copies TREE.sub, the first SUB files, when SUB < FILES).

# list_check NAME: the copy NAME left in W/dst holds count NAME files, each
# the Source's.
list_check() {
  local want; want=$(count "$1")
  local got; got=$(find "$W/dst" -path "$W/dst/.rsdump" -prune -o -type f -print | wc -l)
  [ "$got" = "$want" ] || { echo "FAILED: $1 left $got files, want $want" >&2; exit 1; }
  local tree="$TREE"; [ "$1" = resync ] && [ "$SUB" -lt "$FILES" ] && tree="$TREE.sub"
  diff -r -q -x .rsdump "$tree" "$W/dst" >/dev/null || { echo "FAILED: $1's copy differs" >&2; exit 1; }
}

# timed NAME: one run of cmd NAME, checked, as a row of W/results.tsv and a
# line of output (rounds calls it).
timed() {
  local line; line=$(cmd "$1")
  # The runs before leave their files to write back (aria2c and resync
  # sync none): flushed here, or the next run's syncfs would pay for them.
  sync
  local c0; c0=$(server_cpu)
  # shellcheck disable=SC2086
  if ! (cd "$W/work" && /usr/bin/time -f '%e %U %S %M' -o "$W/time" $line >/dev/null 2>"$W/stderr"); then
    echo "FAILED: $line" >&2; tail -20 "$W/stderr" >&2; exit 1
  fi
  local sc; sc=$(awk "BEGIN{print $(server_cpu) - $c0}")
  list_check "$1"
  local s u y k n; read -r s u y k < "$W/time"; n=$(count "$1")
  printf '%s\t%s\t%s\t%s\t%.2f\t%s\t%.0f\t%s\t%.2f\n' "$RUN" "$1" "$n" "$s" "$(awk "BEGIN{print $u+$y}")" "$k" "$(awk "BEGIN{print $n/$s}")" "$(cut -d' ' -f1 /proc/loadavg)" "$sc" >> "$W/results.tsv"
  printf '  %-7s %6d resources %8.2f s wall %8.2f s CPU %8d KB %8.0f/s, %s %.2f s CPU\n' "$1" "$n" "$s" "$(awk "BEGIN{print $u+$y}")" "$k" "$(awk "BEGIN{print $n/$s}")" "$SERVER" "$sc"
}

# list_table: W/results.tsv as a Markdown table of medians, each command's
# rate against sync's.
list_table() {
  python3 - "$W/results.tsv" "$SERVER" <<'PY'
import csv, statistics as st, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter='\t'))
cmds = [c for c in ('sync', 'sync-h1', 'before', 'aria2c', 'resync') if any(r['command'] == c for r in rows)]
def med(c, k, f=float):
    return st.median(f(r[k]) for r in rows if r['command'] == c)
print(f"| command | resources | wall (median) | CPU (median) | {sys.argv[2]} CPU | peak RSS | resources/s | sync's rate, x |")
print('|---|---|---|---|---|---|---|---|')
for c in cmds:
    n = next(r['resources'] for r in rows if r['command'] == c)
    x = f"{med('sync', 'rate') / med(c, 'rate'):.1f}x" if 'sync' in cmds else ''
    print(f"| {c} | {n} | {med(c, 'wall'):.2f} s | {med(c, 'cpu'):.2f} s | {med(c, 'server_cpu'):.2f} s | {med(c, 'rss_kb', int) / 1024:.0f} MiB | {med(c, 'rate'):.0f} | {x} |")
PY
}
