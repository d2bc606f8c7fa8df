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
