package deststate

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

// Workers of a sharded restore hold the tree together (a shared lock),
// each staging in its own directory and writing its own log, which every
// run reads; a run of its own is refused while they do, and once they are
// gone MergeLogs moves their records into the tree's log. Their state is
// never saved.
func TestWorkersShareTheTree(t *testing.T) {
	t.Parallel()
	if runtime.GOOS == "windows" {
		t.Skip("no flock")
	}
	dir := t.TempDir()
	a, err := Open(dir, Options{Command: "unpack --shard", Worker: "slurm-1"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := Open(dir, Options{Command: "unpack --shard", Worker: "slurm-2"})
	if err != nil {
		t.Fatalf("a second worker: %v", err)
	}
	if a.Tmp() == b.Tmp() || a.Tmp() != ".rsdump/tmp/w-slurm-1" || b.Cache() != ".rsdump/cache/w-slurm-2" {
		t.Errorf("staging: %s, %s, %s", a.Tmp(), b.Tmp(), b.Cache())
	}
	os.WriteFile(filepath.Join(dir, b.Tmp(), "staged"), []byte("x"), 0o644)
	if _, err := Open(dir, Options{Command: "unpack"}); !errors.Is(err, ErrLocked) {
		t.Fatalf("a run of its own while workers hold the tree: %v", err)
	}
	// A worker run again clears its own staging only.
	a.Close()
	if a, err = Open(dir, Options{Command: "unpack --shard", Worker: "slurm-1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, b.Tmp(), "staged")); err != nil {
		t.Errorf("a worker's open cleared another's staging: %v", err)
	}
	if err := a.Append([]Record{{Path: "x/a", Length: 1, Hash: "sha-256:aa"}}); err != nil {
		t.Fatal(err)
	}
	if err := b.Append([]Record{{Path: "y/b", Length: 2}, {Path: "x/a", Length: -1}}); err != nil {
		t.Fatal(err)
	}
	if err := a.Save(State{ResourceDumpAt: time.Now()}); err != nil || a.State().ResourceDumpAt.IsZero() {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, DirName, stateName)); err == nil {
		t.Error("a worker saved the state")
	}
	recs, err := a.Lookup(map[string]bool{"y/b": true})
	if err != nil || recs["y/b"].Length != 2 {
		t.Errorf("a worker's lookup of another's record: %v, %v", recs, err)
	}
	if _, err := a.MergeLogs(); err == nil {
		t.Error("a worker merged the logs")
	}
	a.Close()
	b.Close()
	d, err := Open(dir, Options{Command: "unpack --merge"})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if d.Fresh() {
		t.Error("a tree workers wrote in is fresh")
	}
	if _, err := os.Stat(filepath.Join(dir, b.Tmp())); err == nil {
		t.Error("the workers' staging was left by a run of the tree's own")
	}
	n, err := d.MergeLogs()
	if err != nil || n != 3 {
		t.Fatalf("MergeLogs: %d records, %v", n, err)
	}
	if _, err := os.Stat(filepath.Join(dir, DirName, LogsDir)); err == nil {
		t.Error("the workers' logs are left after MergeLogs")
	}
	var owned []string
	d.Owned(context.Background(), "", func(r Record) error { owned = append(owned, r.Path); return nil })
	if len(owned) != 1 || owned[0] != "y/b" {
		t.Errorf("owned after the merge: %v", owned)
	}
	if _, err := Open(dir, Options{Worker: "../x"}); err == nil {
		t.Error("a worker's name with a slash")
	}
}
