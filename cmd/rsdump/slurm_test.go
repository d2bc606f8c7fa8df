package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rsdump/rsdump/layout"
)

// startSlurm starts a single-node Slurm cluster for the test (.ci/slurm-up:
// munged, slurmctld and slurmd, everything under a temporary directory)
// and returns the environment its commands need. The test is skipped,
// saying why, where the daemons cannot start: not root, Slurm or munge
// not installed, or a daemon that fails.
func startSlurm(t *testing.T) []string {
	t.Helper()
	if os.Getuid() != 0 {
		t.Skip("slurm: the test cluster needs root (slurmd runs each job as its user): Slurm test skipped")
	}
	if _, err := exec.LookPath("sbatch"); err != nil {
		t.Skip("slurm: sbatch not found (apt-get install slurm-wlm munge): Slurm test skipped")
	}
	script, err := filepath.Abs(filepath.Join("..", "..", ".ci", "slurm-up"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	out, err := exec.Command(script, dir).CombinedOutput()
	t.Cleanup(func() { exec.Command(script, "--stop", dir).Run() })
	if err != nil {
		t.Skipf("slurm: the daemons could not start (%v): Slurm test skipped\n%s", err, out)
	}
	return append(os.Environ(), "SLURM_CONF="+filepath.Join(dir, "slurm.conf"))
}

// sbatch submits the batch script at path (docs/examples' own) with
// the settings in exports (sbatch --export=ALL,NAME=VALUE,...), its
// #SBATCH lines overridden for this two-CPU node, as an array of tasks
// (or one job when tasks is ""); it waits for the job to end and fails
// the test with every task's output when any failed.
func sbatch(t *testing.T, env []string, dir, name, tasks, path string, exports ...string) {
	t.Helper()
	args := []string{"--wait", "--job-name", name, "--chdir", dir, "--cpus-per-task", "1", "--mem", "0",
		"--export", strings.Join(append([]string{"ALL"}, exports...), ","), "--output", filepath.Join(dir, name+"-0.out")}
	if tasks != "" {
		args = append(args, "--array", tasks, "--output", filepath.Join(dir, name+"-%a.out"))
	}
	cmd := exec.Command("sbatch", append(args, path)...)
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if err != nil {
		logs, _ := filepath.Glob(filepath.Join(dir, name+"-*.out"))
		var b strings.Builder
		for _, l := range logs {
			data, _ := os.ReadFile(l)
			fmt.Fprintf(&b, "--- %s\n%s", l, data)
		}
		t.Fatalf("sbatch %s: %v\n%s\n%s", name, err, out, b.String())
	}
}

// taskLog is the output of task k of a job sbatch ran.
func taskLog(t *testing.T, dir, name string, k int) string {
	b, _ := os.ReadFile(filepath.Join(dir, fmt.Sprintf("%s-%d.out", name, k)))
	return string(b)
}

// On a real Slurm cluster, the batch scripts of docs/examples as they are
// published: an array of four pack tasks with --shard auto
// (pack.sbatch), the merge as a job of its own (merge.sbatch), then an
// array of four unpack tasks restoring the dump into one directory with
// --shard auto (restore.sbatch), and its merge: the Destination is
// exact, and each task's log says the scheduler and the K/N it took.
func TestSlurmShardedPackAndRestore(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Slurm cluster: not with -short")
	}
	env := startSlurm(t)
	bin := buildRsdump(t)
	src := shardTree(t, 200, 5000)
	work, out, dest := t.TempDir(), t.TempDir(), t.TempDir()
	examples, _ := filepath.Abs(filepath.Join("..", "..", "docs", "examples"))
	settings := []string{"RSDUMP=" + bin, "SRC=" + src, "OUT=" + out, "BASE_URL=http://127.0.0.1/rs/",
		"DUMP_URL=http://127.0.0.1/dump/", "MAX_PACKAGE_SIZE=60000", "LEASE=1m"}
	sbatch(t, env, work, "pack", "1-4", filepath.Join(examples, "pack.sbatch"), settings...)
	for k := 1; k <= 4; k++ {
		if log := taskLog(t, work, "pack", k); !strings.Contains(log, fmt.Sprintf("slurm task %d of 4 (job ", k)) ||
			!strings.Contains(log, fmt.Sprintf("SLURM_ARRAY_TASK_ID=%d, SLURM_ARRAY_TASK_MIN=1", k)) || !strings.Contains(log, "claiming parts of 16") {
			t.Errorf("pack task %d's log:\n%s", k, log)
		}
	}
	sbatch(t, env, work, "merge", "", filepath.Join(examples, "merge.sbatch"), settings...)
	doc := filepath.Join(out, layout.DumpName)
	sbatch(t, env, work, "restore", "1-4", filepath.Join(examples, "restore.sbatch"),
		"RSDUMP="+bin, "DUMP="+doc, "DEST="+dest, "BASE_URL=http://127.0.0.1/rs/", "LEASE=1m")
	restored := 0
	for k := 1; k <= 4; k++ {
		log := taskLog(t, work, "restore", k)
		if !strings.Contains(log, fmt.Sprintf("slurm task %d of 4 (job ", k)) {
			t.Errorf("restore task %d's log:\n%s", k, log)
		}
		var n int
		if i := strings.Index(log, "packages restored here: "); i >= 0 {
			fmt.Sscanf(log[i:], "packages restored here: %d", &n)
		}
		restored += n
	}
	code, stdout, stderr := rsdump(t, "unpack", doc, "--dest", dest, "--base-url", "http://127.0.0.1/rs/", "--merge")
	if code != exitOK || !strings.Contains(stdout, "merged: the written logs' 200 records") {
		t.Errorf("the restore's merge: exit %d\n%s%s", code, stdout, stderr)
	}
	if restored == 0 {
		t.Error("the restore tasks' logs count no package")
	}
	sameFiles(t, "restored under Slurm", dirFiles(t, src), dirFiles(t, dest))
}
