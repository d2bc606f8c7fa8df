package unpack_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rsdump/rsdump/deststate"
	"github.com/rsdump/rsdump/finding"
	"github.com/rsdump/rsdump/internal/verifytest"
	"github.com/rsdump/rsdump/layout"
	"github.com/rsdump/rsdump/pack"
	"github.com/rsdump/rsdump/unpack"
)

// shardSource writes a tree of n files over a few directories, each with
// an mtime before at, and packs it at at into packages of 3 files.
func shardSource(t *testing.T, n int, at time.Time) (src, out string) {
	src, out = t.TempDir(), t.TempDir()
	for i := range n {
		put(t, src, fmt.Sprintf("d%d/f%03d.txt", i%4, i), fmt.Sprintf("file %d %s", i, strings.Repeat("x", i)), at.Add(-time.Hour))
	}
	if _, err := pack.Pack(context.Background(), src, out, pack.Options{BaseURL: verifytest.BaseURL, At: at, MaxEntries: 3}); err != nil {
		t.Fatal(err)
	}
	return src, out
}

func put(t *testing.T, root, rel, data string, mtime time.Time) {
	t.Helper()
	p := filepath.Join(root, filepath.FromSlash(rel))
	os.MkdirAll(filepath.Dir(p), 0o755)
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Chtimes(p, mtime, mtime)
}

// restoreWorkers runs n workers of a sharded restore of doc into dir at
// once and returns their results.
func restoreWorkers(t *testing.T, doc, dir string, n int, o unpack.Options) []*unpack.Result {
	t.Helper()
	res := make([]*unpack.Result, n)
	var wg sync.WaitGroup
	for k := range n {
		wg.Go(func() {
			w := o
			w.Mapper, w.Jobs = mapper(t), 2
			w.Shard = &unpack.ShardOptions{K: k + 1, N: n, Worker: fmt.Sprintf("worker %d", k+1), Lease: time.Minute}
			var err error
			if res[k], err = unpack.Work(context.Background(), doc, dir, w); err != nil {
				t.Errorf("worker %d: %v", k+1, err)
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	return res
}

// Three workers restore one Resource Dump into one tree, each package
// once; the merge leaves an ordinary Destination: the tree exact, the
// state at the dump's at, the written log holding every file, nothing of
// the workers left; a Change Dump then applies to it, deletions too
// (which only files the written log says rsdump wrote allow).
func TestShardedRestoreThenChanges(t *testing.T) {
	t.Parallel()
	at := verifytest.Time
	src, out := shardSource(t, 40, at)
	doc := filepath.Join(out, layout.DumpName)
	dir := t.TempDir()
	res := restoreWorkers(t, doc, dir, 3, unpack.Options{})
	restored, planned := 0, 0
	for _, r := range res {
		restored += len(r.Shards.Restored)
		if r.Shards.Planned {
			planned++
		}
		if r.Problems() != 0 {
			t.Errorf("a worker found problems: %+v", r)
		}
	}
	if restored != 14 || planned != 1 {
		t.Fatalf("%d packages restored by the workers (want 14), the plan made by %d", restored, planned)
	}
	m, err := unpack.MergeShards(context.Background(), doc, dir, unpack.Options{Mapper: mapper(t)})
	if err != nil {
		t.Fatal(err)
	}
	if m.Packages != 14 || m.Merged < 40 {
		t.Errorf("merge: %+v", m)
	}
	equalMaps(t, "restored", contents(readTree(t, dir)), contents(readTree(t, src)))
	st, _ := deststate.Read(dir)
	if !st.ResourceDumpAt.Equal(at) || st.Pending || st.Source != doc {
		t.Errorf("state after the merge: %+v", st)
	}
	for _, gone := range []string{deststate.LogsDir, deststate.ShardsDir} {
		if _, err := os.Stat(filepath.Join(dir, deststate.DirName, gone)); err == nil {
			t.Errorf("%s left after the merge", gone)
		}
	}
	// The Source changes; its Change Dump applies to the restored tree.
	later := at.Add(time.Hour)
	put(t, src, "d1/f001.txt", "updated", at.Add(10*time.Minute))
	put(t, src, "new/g.txt", "created", at.Add(20*time.Minute))
	os.Remove(filepath.Join(src, "d2/f002.txt"))
	if _, err := pack.Pack(context.Background(), src, out, pack.Options{BaseURL: verifytest.BaseURL, At: later, Changes: true}); err != nil {
		t.Fatal(err)
	}
	r, fs := run(t, filepath.Join(out, layout.ChangeDumpName), dir, unpack.Options{})
	if r.Problems() != 0 || r.Deleted != 1 {
		t.Fatalf("the Change Dump: %+v\n%s", r, dump(fs))
	}
	equalMaps(t, "after the Change Dump", contents(readTree(t, dir)), contents(readTree(t, src)))
}

// The merge refuses while a package is unclaimed, held by a live worker
// or left by one that stopped, naming each, and records nothing; a worker
// run again restores what was left, and the merge then succeeds.
func TestShardMergeRefusesPackagesNotRestored(t *testing.T) {
	t.Parallel()
	src, out := shardSource(t, 12, verifytest.Time)
	doc := filepath.Join(out, layout.DumpName)
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	o := unpack.Options{Mapper: mapper(t), Jobs: 1, Shard: &unpack.ShardOptions{K: 1, N: 2, Worker: "task 1", Lease: time.Minute}}
	o.Events = func(e finding.Event) {
		if _, ok := e.(unpack.PackageClaimed); ok {
			if n++; n == 2 {
				cancel() // a SIGTERM as the second package is claimed
			}
		}
	}
	if _, err := unpack.Work(ctx, doc, dir, o); !errors.Is(err, context.Canceled) {
		t.Fatalf("the interrupted worker: %v", err)
	}
	_, err := unpack.MergeShards(context.Background(), doc, dir, unpack.Options{Mapper: mapper(t)})
	var se *unpack.ShardsError
	if !errors.As(err, &se) || len(se.NotDone) != 3 || !strings.Contains(err.Error(), "3 packages of 4 not restored") ||
		!strings.Contains(err.Error(), "resourcedump-00002.zip (task 1 on ") || !strings.Contains(err.Error(), "gave it up: context canceled") ||
		!strings.Contains(err.Error(), "resourcedump-00003.zip (unclaimed)") {
		t.Fatalf("merge with packages not restored: %v", err)
	}
	if st, _ := deststate.Read(dir); !st.ResourceDumpAt.IsZero() {
		t.Errorf("a refused merge recorded %+v", st)
	}
	o.Events, o.Shard.K = nil, 2
	res, err := unpack.Work(context.Background(), doc, dir, o)
	if err != nil || len(res.Shards.Restored) != 3 || res.Shards.Done != 4 {
		t.Fatalf("the worker run again: %+v, %v", res.Shards, err)
	}
	if _, err := unpack.MergeShards(context.Background(), doc, dir, unpack.Options{Mapper: mapper(t)}); err != nil {
		t.Fatal(err)
	}
	equalMaps(t, "restored", contents(readTree(t, dir)), contents(readTree(t, src)))
}

// Two packages carry one target with different content: whichever
// workers restore them, both are refused it, as in one process.
func TestShardedRestoreRefusesClash(t *testing.T) {
	t.Parallel()
	z1, _ := verifytest.Package(t, []verifytest.File{{Rel: "a.txt", Data: "one"}, {Rel: "b.txt", Data: "same"}})
	z2, _ := verifytest.Package(t, []verifytest.File{{Rel: "a.txt", Data: "two"}, {Rel: "b.txt", Data: "same"}, {Rel: "c.txt", Data: "c"}})
	doc := verifytest.ResourceDump(t, t.TempDir(), z1, z2)
	dir := t.TempDir()
	var mu sync.Mutex
	var clashes []finding.Finding
	res := restoreWorkers(t, doc, dir, 2, unpack.Options{Events: func(e finding.Event) {
		if f, ok := e.(finding.Finding); ok && f.Code == finding.CheckClash {
			mu.Lock()
			clashes = append(clashes, f)
			mu.Unlock()
		}
	}})
	equalMaps(t, "tree", contents(readTree(t, dir)), map[string]string{"b.txt": "same", "c.txt": "c"})
	// Each package is refused a.txt; a package given up is tried again by
	// the other worker, refused again.
	named := map[string]bool{}
	for _, f := range clashes {
		named[filepath.Base(f.Source)] = f.Path == "a.txt" && f.Severity == finding.Error
	}
	if len(named) != 2 || !named["resourcedump-00001.zip"] || !named["resourcedump-00002.zip"] {
		t.Errorf("clashes: %v", clashes)
	}
	left := 0
	for _, r := range res {
		left += len(r.Shards.Left)
	}
	if left == 0 {
		t.Error("packages refused a target were not left for a rerun")
	}
	if _, err := unpack.MergeShards(context.Background(), doc, dir, unpack.Options{Mapper: mapper(t)}); err == nil || !strings.Contains(err.Error(), "not restored whole") {
		t.Errorf("merge after clashes: %v", err)
	}
}
