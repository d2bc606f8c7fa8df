package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func envOf(kv ...string) func(string) string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) string { return m[k] }
}

// --shard auto reads each scheduler's variables: good ones give K and N,
// missing or inconsistent ones an error naming them.
func TestTaskFromEnv(t *testing.T) {
	t.Parallel()
	good := []struct {
		name   string
		env    func(string) string
		shards int
		k, n   int
		sched  string
		worker string
	}{
		{"slurm 1-4", envOf("SLURM_ARRAY_TASK_ID", "3", "SLURM_ARRAY_TASK_MIN", "1", "SLURM_ARRAY_TASK_MAX", "4", "SLURM_ARRAY_TASK_COUNT", "4", "SLURM_ARRAY_TASK_STEP", "1", "SLURM_ARRAY_JOB_ID", "812"), 0, 3, 4, "slurm", "slurm task 3 of 4 (job 812)"},
		{"slurm from 0", envOf("SLURM_ARRAY_TASK_ID", "0", "SLURM_ARRAY_TASK_MIN", "0", "SLURM_ARRAY_TASK_COUNT", "16"), 0, 1, 16, "slurm", "slurm task 1 of 16"},
		{"slurm from 100 in steps of 10", envOf("SLURM_ARRAY_TASK_ID", "130", "SLURM_ARRAY_TASK_MIN", "100", "SLURM_ARRAY_TASK_MAX", "150", "SLURM_ARRAY_TASK_COUNT", "6", "SLURM_ARRAY_TASK_STEP", "10"), 0, 4, 6, "slurm", "slurm task 4 of 6"},
		{"slurm with --shards agreeing", envOf("SLURM_ARRAY_TASK_ID", "2", "SLURM_ARRAY_TASK_MIN", "1", "SLURM_ARRAY_TASK_COUNT", "2"), 2, 2, 2, "slurm", "slurm task 2 of 2"},
		{"kubernetes, --shards", envOf("JOB_COMPLETION_INDEX", "0"), 8, 1, 8, "kubernetes", "kubernetes task 1 of 8"},
		{"kubernetes, RSDUMP_SHARDS", envOf("JOB_COMPLETION_INDEX", "7", "RSDUMP_SHARDS", "8"), 0, 8, 8, "kubernetes", "kubernetes task 8 of 8"},
		{"aws batch", envOf("AWS_BATCH_JOB_ARRAY_INDEX", "4", "RSDUMP_SHARDS", "10", "AWS_BATCH_JOB_ID", "a1b2:4"), 10, 5, 10, "aws-batch", "aws-batch task 5 of 10 (job a1b2:4)"},
	}
	for _, c := range good {
		got, err := taskFromEnv(c.env, c.shards)
		if err != nil || got.K != c.k || got.N != c.n || got.Scheduler != c.sched || got.String() != c.worker {
			t.Errorf("%s: %+v, %v; want %s", c.name, got, err, c.worker)
		}
	}
	bad := []struct {
		name   string
		env    func(string) string
		shards int
		want   []string
	}{
		{"none", envOf(), 0, []string{"SLURM_ARRAY_TASK_ID", "JOB_COMPLETION_INDEX", "AWS_BATCH_JOB_ARRAY_INDEX", "--shard K/N"}},
		{"two schedulers", envOf("SLURM_ARRAY_TASK_ID", "1", "JOB_COMPLETION_INDEX", "0"), 0, []string{"SLURM_ARRAY_TASK_ID and JOB_COMPLETION_INDEX"}},
		{"slurm without min or count", envOf("SLURM_ARRAY_TASK_ID", "3"), 0, []string{"SLURM_ARRAY_TASK_MIN nor SLURM_ARRAY_TASK_COUNT"}},
		{"slurm not a number", envOf("SLURM_ARRAY_TASK_ID", "x", "SLURM_ARRAY_TASK_MIN", "1", "SLURM_ARRAY_TASK_COUNT", "4"), 0, []string{`SLURM_ARRAY_TASK_ID="x"`}},
		{"slurm id past the count", envOf("SLURM_ARRAY_TASK_ID", "5", "SLURM_ARRAY_TASK_MIN", "1", "SLURM_ARRAY_TASK_COUNT", "4"), 0, []string{"SLURM_ARRAY_TASK_ID=5 is not one of 4 tasks from SLURM_ARRAY_TASK_MIN=1"}},
		{"slurm id below min", envOf("SLURM_ARRAY_TASK_ID", "0", "SLURM_ARRAY_TASK_MIN", "1", "SLURM_ARRAY_TASK_COUNT", "4"), 0, []string{"SLURM_ARRAY_TASK_ID=0"}},
		{"slurm a list of ids", envOf("SLURM_ARRAY_TASK_ID", "4", "SLURM_ARRAY_TASK_MIN", "1", "SLURM_ARRAY_TASK_MAX", "7", "SLURM_ARRAY_TASK_COUNT", "3"), 0, []string{"SLURM_ARRAY_TASK_MAX=7", "evenly spaced"}},
		{"slurm and --shards disagree", envOf("SLURM_ARRAY_TASK_ID", "1", "SLURM_ARRAY_TASK_MIN", "1", "SLURM_ARRAY_TASK_COUNT", "4"), 3, []string{"--shards 3 and SLURM_ARRAY_TASK_COUNT=4 disagree"}},
		{"kubernetes without N", envOf("JOB_COMPLETION_INDEX", "2"), 0, []string{"JOB_COMPLETION_INDEX=2", "--shards N or RSDUMP_SHARDS=N"}},
		{"kubernetes index past N", envOf("JOB_COMPLETION_INDEX", "4", "RSDUMP_SHARDS", "4"), 0, []string{"JOB_COMPLETION_INDEX=4 is not an index from 0 among RSDUMP_SHARDS=4 tasks"}},
		{"kubernetes negative index", envOf("JOB_COMPLETION_INDEX", "-1"), 4, []string{`JOB_COMPLETION_INDEX="-1"`}},
		{"flag and env disagree", envOf("JOB_COMPLETION_INDEX", "1", "RSDUMP_SHARDS", "4"), 5, []string{"--shards 5 and RSDUMP_SHARDS=4 disagree"}},
		{"RSDUMP_SHARDS not a number", envOf("AWS_BATCH_JOB_ARRAY_INDEX", "1", "RSDUMP_SHARDS", "four"), 0, []string{`RSDUMP_SHARDS="four"`}},
		{"aws batch without N", envOf("AWS_BATCH_JOB_ARRAY_INDEX", "1"), 0, []string{"AWS_BATCH_JOB_ARRAY_INDEX=1", "aws-batch does not export it"}},
	}
	for _, c := range bad {
		got, err := taskFromEnv(c.env, c.shards)
		if err == nil {
			t.Errorf("%s: %+v, want an error", c.name, got)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %v; want it to say %q", c.name, err, w)
			}
		}
	}
}

// --shard auto with a scheduler's variables missing is a usage error
// (exit 2) naming them; --shards and --lease without claimed parts too.
func TestShardAutoUsage(t *testing.T) {
	for _, k := range []string{"SLURM_ARRAY_TASK_ID", "JOB_COMPLETION_INDEX", "AWS_BATCH_JOB_ARRAY_INDEX", "RSDUMP_SHARDS"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	src, out := t.TempDir(), t.TempDir()
	flags := []string{"pack", src, "-o", out, "--base-url", "http://127.0.0.1/"}
	cases := []struct {
		env  []string
		args []string
		want string
	}{
		{nil, []string{"--shard", "auto"}, "no array task index in the environment"},
		{[]string{"JOB_COMPLETION_INDEX", "1"}, []string{"--shard", "auto"}, "--shards N or RSDUMP_SHARDS=N"},
		{[]string{"SLURM_ARRAY_TASK_ID", "2"}, []string{"--shard", "auto"}, "SLURM_ARRAY_TASK_MIN nor SLURM_ARRAY_TASK_COUNT"},
		{nil, []string{"--shards", "4"}, "--shards needs --shard auto"},
		{nil, []string{"--shard", "1/2", "--lease", "1m"}, "--lease goes with claimed parts"},
		{nil, []string{"--shard", "1/2", "--shards", "2"}, "--shards goes with --shard auto"},
		{nil, []string{"--merge", "--parts", "4"}, "--merge takes no SRC, --shard, --parts"},
	}
	for _, c := range cases {
		for i := 0; i+1 < len(c.env); i += 2 {
			t.Setenv(c.env[i], c.env[i+1])
		}
		args := append(append([]string{}, flags...), c.args...)
		if c.args[0] == "--merge" {
			args = append([]string{"pack", "-o", out, "--base-url", "http://127.0.0.1/"}, c.args...)
		}
		code, _, stderr := rsdump(t, args...)
		if code != exitUsage || !strings.Contains(stderr, c.want) {
			t.Errorf("%v %v: exit %d, %s; want 2 and %q", c.env, c.args, code, stderr, c.want)
		}
		for i := 0; i+1 < len(c.env); i += 2 {
			os.Unsetenv(c.env[i])
		}
	}
}

// slurmEnv is the environment of task id of a Slurm array 1-n.
func slurmEnv(id, n int) []string {
	return []string{fmt.Sprintf("SLURM_ARRAY_TASK_ID=%d", id), "SLURM_ARRAY_TASK_MIN=1", fmt.Sprintf("SLURM_ARRAY_TASK_MAX=%d", n),
		fmt.Sprintf("SLURM_ARRAY_TASK_COUNT=%d", n), "SLURM_ARRAY_TASK_STEP=1", "SLURM_ARRAY_JOB_ID=4242"}
}

// A tree of files in a few directories, sized to take a moment to pack.
func shardTree(t *testing.T, files, size int) string {
	src := t.TempDir()
	for i := range files {
		dir := filepath.Join(src, fmt.Sprintf("d%d", i%7), fmt.Sprintf("e%d", i%3))
		os.MkdirAll(dir, 0o755)
		os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%04d", i)), randomFile(uint64(i+1), size+i%100), 0o644)
	}
	return src
}

// Workers under --shard auto with Slurm's variables: the log and --json
// say which scheduler and K/N each took; a worker killed (SIGKILL) in the
// middle of a part leaves its claim, which a worker run again takes over
// once the lease has passed; the merge is then exact, and unpack restores
// the tree.
func TestPackShardAutoKilledWorker(t *testing.T) {
	if testing.Short() {
		t.Skip("kills a worker and waits for its lease: not with -short")
	}
	bin := buildRsdump(t)
	src := shardTree(t, 120, 30000)
	out := t.TempDir()
	flags := []string{"--base-url", "http://127.0.0.1/rs/", "--at", "2026-11-28T00:00:00Z", "--max-package-size", "40000", "-j", "1", "--parts", "6", "--lease", "10s"}
	worker := func(id int, extra ...string) *exec.Cmd {
		cmd := exec.Command(bin, append(append([]string{"pack", src, "-o", out, "--shard", "auto"}, flags...), extra...)...)
		cmd.Env = append(os.Environ(), slurmEnv(id, 2)...)
		return cmd
	}
	// Task 1 is killed once it has published two packages of its part.
	killed := worker(1)
	var log lockedBuffer
	killed.Stderr = &log
	if err := killed.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for strings.Count(log.String(), ".zip: ") < 2 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	killed.Process.Signal(syscall.SIGKILL)
	killedAt := time.Now()
	killed.Wait()
	if !strings.Contains(log.String(), "slurm task 1 of 2 (job 4242), from SLURM_ARRAY_TASK_ID=1, SLURM_ARRAY_TASK_MIN=1") ||
		!strings.Contains(log.String(), "claiming parts of 6") || !strings.Contains(log.String(), "part 1 of 6 claimed") {
		t.Fatalf("the killed worker's log:\n%s", log.String())
	}
	// Task 2, at once: the killed task's part is held.
	var o2 bytes.Buffer
	w2 := worker(2, "--json")
	w2.Stdout = &o2
	if err := w2.Run(); err != nil {
		t.Fatalf("task 2: %v", err)
	}
	var s packSummary
	if err := json.Unmarshal(o2.Bytes(), &s); err != nil || s.Scheduler != "slurm" || s.Shard != 2 || s.Shards != 2 || s.Parts == nil || s.Parts.Parts != 6 {
		t.Fatalf("task 2's --json: %v\n%s", err, o2.String())
	}
	if len(s.Parts.Held) != 1 || !strings.Contains(s.Parts.Held[0], "slurm task 1 of 2 (job 4242)") {
		t.Fatalf("task 2 left held: %v\n%s", s.Parts.Held, o2.String())
	}
	held := s.Parts.Held[0]
	code, _, stderr := rsdump(t, "pack", "--merge", "-o", out, "--base-url", "http://127.0.0.1/rs/", "--at", "2026-11-28T00:00:00Z", "--max-package-size", "40000")
	if code != exitFailed || !strings.Contains(stderr, "1 part of 6 not done: part ") || !strings.Contains(stderr, "held by slurm task 1 of 2") {
		t.Fatalf("merge while a part is held: exit %d\n%s", code, stderr)
	}
	// Task 1 run again, by the scheduler, once the lease passed.
	time.Sleep(time.Until(killedAt.Add(10200 * time.Millisecond)))
	var o1, e1 bytes.Buffer
	again := worker(1, "--json")
	again.Stdout, again.Stderr = &o1, &e1
	if err := again.Run(); err != nil {
		t.Fatalf("task 1 again: %v\n%s", err, e1.String())
	}
	if err := json.Unmarshal(o1.Bytes(), &s); err != nil || len(s.Parts.Packed) != 1 || s.Parts.Done != 6 || s.Reused < 2 {
		t.Fatalf("task 1 again: %+v (held was %s)\n%s", s.Parts, held, o1.String())
	}
	code, _, stderr = rsdump(t, "pack", "--merge", "-q", "-o", out, "--base-url", "http://127.0.0.1/rs/", "--at", "2026-11-28T00:00:00Z", "--max-package-size", "40000")
	if code != exitOK {
		t.Fatalf("merge: exit %d\n%s", code, stderr)
	}
	dest := t.TempDir()
	if code, _, stderr := rsdump(t, "unpack", "-q", filepath.Join(out, "resourcedump.xml"), "--dest", dest, "--base-url", "http://127.0.0.1/rs/"); code != exitOK {
		t.Fatalf("unpack: exit %d\n%s", code, stderr)
	}
	sameFiles(t, "unpacked", dirFiles(t, src), dirFiles(t, dest))
}
