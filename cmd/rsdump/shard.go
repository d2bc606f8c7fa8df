package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
)

// task is a worker's place in a scheduler's array job: K of N, from 1.
type task struct {
	Scheduler string // "slurm", "kubernetes", "aws-batch"; "" for --shard K/N
	K, N      int
	Job       string   // the array job, when the scheduler names it
	From      []string // the variables read, NAME=VALUE, for the log
}

// String names the worker in its claims and its log.
func (t task) String() string {
	if t.Scheduler == "" {
		return fmt.Sprintf("shard %d of %d", t.K, t.N)
	}
	s := fmt.Sprintf("%s task %d of %d", t.Scheduler, t.K, t.N)
	if t.Job != "" {
		s += " (job " + t.Job + ")"
	}
	return s
}

// The variables each scheduler sets in an array job's tasks.
const (
	envSlurmID    = "SLURM_ARRAY_TASK_ID"
	envSlurmMin   = "SLURM_ARRAY_TASK_MIN"
	envSlurmMax   = "SLURM_ARRAY_TASK_MAX"
	envSlurmCount = "SLURM_ARRAY_TASK_COUNT"
	envSlurmStep  = "SLURM_ARRAY_TASK_STEP"
	envSlurmJob   = "SLURM_ARRAY_JOB_ID"
	// A Kubernetes Indexed Job sets the index from 0; it does not export
	// its completions, N.
	envK8sIndex = "JOB_COMPLETION_INDEX"
	// An AWS Batch array job's child sets its index from 0; nor does it
	// export the array's size.
	envBatchIndex = "AWS_BATCH_JOB_ARRAY_INDEX"
	envBatchJob   = "AWS_BATCH_JOB_ID"
	// envShards is N where the scheduler does not say it (--shards N).
	envShards = "RSDUMP_SHARDS"
)

// taskFromEnv is --shard auto: the worker's K and N from the scheduler's
// environment. shards is --shards N, 0 when not given. Missing or
// inconsistent variables are an error naming them.
func taskFromEnv(getenv func(string) string, shards int) (task, error) {
	var found []string
	for _, v := range []string{envSlurmID, envK8sIndex, envBatchIndex} {
		if getenv(v) != "" {
			found = append(found, v)
		}
	}
	switch {
	case len(found) == 0:
		return task{}, fmt.Errorf("--shard auto: no array task index in the environment (%s for Slurm, %s for a Kubernetes Indexed Job, %s for AWS Batch): give --shard K/N", envSlurmID, envK8sIndex, envBatchIndex)
	case len(found) > 1:
		return task{}, fmt.Errorf("--shard auto: both %s and %s are set: which scheduler runs this task? give --shard K/N", found[0], found[1])
	}
	n, from, err := shardsGiven(getenv, shards)
	if err != nil {
		return task{}, err
	}
	switch found[0] {
	case envSlurmID:
		return slurmTask(getenv, n, from)
	case envK8sIndex:
		return indexTask(getenv, "kubernetes", envK8sIndex, "", n, from)
	}
	return indexTask(getenv, "aws-batch", envBatchIndex, envBatchJob, n, from)
}

// shardsGiven is N as --shards or RSDUMP_SHARDS gives it (0: neither),
// and where it came from; the two must agree.
func shardsGiven(getenv func(string) string, flag int) (int, string, error) {
	env := getenv(envShards)
	if env == "" {
		if flag > 0 {
			return flag, fmt.Sprintf("--shards %d", flag), nil
		}
		return 0, "", nil
	}
	n, err := strconv.Atoi(env)
	if err != nil || n < 1 {
		return 0, "", fmt.Errorf("--shard auto: %s=%q is not a number of shards", envShards, env)
	}
	if flag > 0 && flag != n {
		return 0, "", fmt.Errorf("--shard auto: --shards %d and %s=%d disagree", flag, envShards, n)
	}
	return n, envShards + "=" + env, nil
}

// slurmTask reads a Slurm array task: K counts from the array's first
// id (SLURM_ARRAY_TASK_MIN, not necessarily 1 or 0) in steps of
// SLURM_ARRAY_TASK_STEP; N is SLURM_ARRAY_TASK_COUNT. An array given as
// a list of ids that are not evenly spaced (--array=1,4,5) has no K.
func slurmTask(getenv func(string) string, n int, nFrom string) (task, error) {
	t := task{Scheduler: "slurm", Job: getenv(envSlurmJob)}
	vals := map[string]int{}
	var missing []string
	for _, v := range []string{envSlurmID, envSlurmMin, envSlurmCount, envSlurmStep, envSlurmMax} {
		s := getenv(v)
		if s == "" {
			if v != envSlurmStep && v != envSlurmMax {
				missing = append(missing, v)
			}
			continue
		}
		x, err := strconv.Atoi(s)
		if err != nil || x < 0 {
			return t, fmt.Errorf("--shard auto: %s=%q is not an array task id or count", v, s)
		}
		vals[v] = x
		t.From = append(t.From, v+"="+s)
	}
	if len(missing) > 0 {
		return t, fmt.Errorf("--shard auto: %s is set but not %s: not a Slurm array task?", envSlurmID, strings.Join(missing, " nor "))
	}
	id, lo, count := vals[envSlurmID], vals[envSlurmMin], vals[envSlurmCount]
	step, ok := vals[envSlurmStep]
	if !ok || step < 1 {
		step = 1
	}
	hi, hasHi := vals[envSlurmMax]
	switch {
	case hasHi && hi != lo+(count-1)*step:
		return t, fmt.Errorf("--shard auto: %s=%d, %s=%d and %s=%d do not make an evenly spaced array (a list of ids?): give --array=A-B, or --shard K/N", envSlurmMin, lo, envSlurmMax, hi, envSlurmCount, count)
	case count < 1 || id < lo || (id-lo)%step != 0 || (id-lo)/step >= count:
		return t, fmt.Errorf("--shard auto: %s=%d is not one of %d tasks from %s=%d in steps of %d", envSlurmID, id, count, envSlurmMin, lo, step)
	case n > 0 && n != count:
		return t, fmt.Errorf("--shard auto: %s and %s=%d disagree", nFrom, envSlurmCount, count)
	}
	t.K, t.N = (id-lo)/step+1, count
	return t, nil
}

// indexTask reads a task whose index counts from 0 and whose N the
// scheduler does not export: --shards N or RSDUMP_SHARDS give it.
func indexTask(getenv func(string) string, sched, indexVar, jobVar string, n int, nFrom string) (task, error) {
	t := task{Scheduler: sched}
	if jobVar != "" {
		t.Job = getenv(jobVar)
	}
	s := getenv(indexVar)
	idx, err := strconv.Atoi(s)
	if err != nil || idx < 0 {
		return t, fmt.Errorf("--shard auto: %s=%q is not an index", indexVar, s)
	}
	if n == 0 {
		return t, fmt.Errorf("--shard auto: %s=%s, but the number of tasks is not known (%s does not export it): give --shards N or %s=N", indexVar, s, sched, envShards)
	}
	if idx >= n {
		return t, fmt.Errorf("--shard auto: %s=%d is not an index from 0 among %s tasks", indexVar, idx, nFrom)
	}
	t.K, t.N, t.From = idx+1, n, []string{indexVar + "=" + s, nFrom}
	return t, nil
}

// shardFlags are the flags of a sharded run, pack's and unpack's.
type shardFlags struct {
	shard  string
	shards int
	lease  time.Duration
}

func (f *shardFlags) register(fs *pflag.FlagSet, what string) {
	fs.StringVar(&f.shard, "shard", "", "be worker `K/N` (K of N workers), or auto (K and N from Slurm's, a Kubernetes Indexed Job's or AWS Batch's environment), "+what)
	fs.IntVar(&f.shards, "shards", 0, "with --shard auto: the number of workers `N`, where the scheduler does not export it (Kubernetes, AWS Batch; or RSDUMP_SHARDS)")
	fs.DurationVar(&f.lease, "lease", 0, "how long a claim holds without renewal (`DURATION`, default 5m): a worker that dies leaves its claim to another once it has passed")
}

// task is the worker the flags name: none (ok false) without --shard.
func (f *shardFlags) task() (t task, ok bool, err error) {
	switch {
	case f.shard == "":
		if f.shards != 0 {
			return t, false, usagef("--shards needs --shard auto")
		}
		return t, false, nil
	case f.shards < 0 || f.lease < 0:
		return t, false, usagef("--shards and --lease must not be negative")
	case f.shard == "auto":
		t, err = taskFromEnv(os.Getenv, f.shards)
		if err != nil {
			return t, false, usageError{err}
		}
		return t, true, nil
	case f.shards != 0:
		return t, false, usagef("--shards goes with --shard auto; --shard K/N says N")
	}
	k, n, ok := strings.Cut(f.shard, "/")
	var err1, err2 error
	if t.K, err1 = strconv.Atoi(k); ok {
		t.N, err2 = strconv.Atoi(n)
	}
	if !ok || err1 != nil || err2 != nil || t.N < 1 || t.K < 1 || t.K > t.N {
		return t, false, usagef("--shard %q: want K/N with 1 <= K <= N, or auto", f.shard)
	}
	return t, true, nil
}

// describe is the line a worker's log begins with: which scheduler, which
// K of N, and from what.
func (t task) describe() string {
	if len(t.From) == 0 {
		return t.String()
	}
	return fmt.Sprintf("%s, from %s", t, strings.Join(t.From, ", "))
}
