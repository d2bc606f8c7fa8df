package main

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/rsdump/rsdump/layout"
)

// k8sJob is what the test reads of a Kubernetes Job.
type k8sJob struct {
	Kind     string `yaml:"kind"`
	Metadata struct {
		Name string `yaml:"name"`
	} `yaml:"metadata"`
	Spec struct {
		CompletionMode string `yaml:"completionMode"`
		Completions    int    `yaml:"completions"`
		Parallelism    int    `yaml:"parallelism"`
		Template       struct {
			Spec struct {
				Containers []struct {
					Command []string `yaml:"command"`
					Env     []struct {
						Name  string `yaml:"name"`
						Value string `yaml:"value"`
					} `yaml:"env"`
				} `yaml:"containers"`
			} `yaml:"spec"`
		} `yaml:"template"`
	} `yaml:"spec"`
}

func (j *k8sJob) env(name string) (string, bool) {
	for _, e := range j.Spec.Template.Spec.Containers[0].Env {
		if e.Name == name {
			return e.Value, true
		}
	}
	return "", false
}

func readJobs(t *testing.T, path string) []*k8sJob {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var jobs []*k8sJob
	dec := yaml.NewDecoder(bytes.NewReader(b))
	for {
		var j k8sJob
		err := dec.Decode(&j)
		if errors.Is(err, io.EOF) {
			return jobs
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if j.Kind != "Job" || len(j.Spec.Template.Spec.Containers) != 1 {
			t.Fatalf("%s: a document that is not a Job of one container: %+v", path, j)
		}
		jobs = append(jobs, &j)
	}
}

// The Kubernetes manifest of docs/examples: an Indexed Job whose pods run
// rsdump pack --shard auto, the index in JOB_COMPLETION_INDEX (which
// Kubernetes sets, and rsdump reads) and N in RSDUMP_SHARDS equal to the
// completions; then a Job of the merge. Its commands, run as written
// (with the collection and the bucket swapped for temporary directories)
// once for every index, pack the collection, and the merge's command
// writes the dump.
func TestKubernetesManifest(t *testing.T) {
	jobs := readJobs(t, filepath.Join("..", "..", "docs", "examples", "pack-job.yaml"))
	if len(jobs) != 2 {
		t.Fatalf("%d Jobs, want the parts' and the merge's", len(jobs))
	}
	pack, merge := jobs[0], jobs[1]
	cmd := pack.Spec.Template.Spec.Containers[0].Command
	n, _ := pack.env(envShards)
	switch {
	case pack.Spec.CompletionMode != "Indexed" || pack.Spec.Completions < 2 || pack.Spec.Parallelism != pack.Spec.Completions:
		t.Fatalf("the parts' Job: completionMode %q, completions %d, parallelism %d", pack.Spec.CompletionMode, pack.Spec.Completions, pack.Spec.Parallelism)
	case n != strconv.Itoa(pack.Spec.Completions):
		t.Fatalf("%s=%q, the Job's completions %d", envShards, n, pack.Spec.Completions)
	case envK8sIndex != "JOB_COMPLETION_INDEX":
		t.Fatalf("rsdump reads %s, not the index an Indexed Job sets", envK8sIndex)
	case len(cmd) < 3 || cmd[0] != "rsdump" || cmd[1] != "pack" || !slices.Contains(cmd, "--shard") || cmd[slices.Index(cmd, "--shard")+1] != "auto":
		t.Fatalf("the parts' command: %q", cmd)
	}
	if _, set := pack.env(envK8sIndex); set {
		t.Errorf("the manifest sets %s, which is Kubernetes'", envK8sIndex)
	}
	mcmd := merge.Spec.Template.Spec.Containers[0].Command
	if merge.Spec.CompletionMode == "Indexed" || len(mcmd) < 3 || mcmd[1] != "pack" || !slices.Contains(mcmd, "--merge") {
		t.Fatalf("the merge's Job: %+v", merge.Spec)
	}
	src, out := shardTree(t, 30, 2000), t.TempDir()
	swap := func(args []string) []string {
		args = slices.Clone(args[1:])
		for i, a := range args {
			switch {
			case a == "/archive/collection":
				args[i] = src
			case strings.HasPrefix(a, "s3://"):
				args[i] = out
			}
		}
		return append(args, "-q")
	}
	t.Setenv(envShards, n)
	for i := range pack.Spec.Completions {
		t.Setenv(envK8sIndex, strconv.Itoa(i))
		if code, _, stderr := rsdump(t, swap(cmd)...); code != exitOK {
			t.Fatalf("pod %d: exit %d\n%s", i, code, stderr)
		}
	}
	os.Unsetenv(envK8sIndex)
	if code, _, stderr := rsdump(t, swap(mcmd)...); code != exitOK {
		t.Fatalf("the merge: exit %d\n%s", code, stderr)
	}
	if code, stdout, stderr := rsdump(t, "verify", filepath.Join(out, layout.DumpName)); code != exitOK || !strings.Contains(stdout, "30 verified") {
		t.Errorf("verify: exit %d\n%s%s", code, stdout, stderr)
	}
}
