package unpack_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/rsdump/rsdump/internal/verifytest"
	"github.com/rsdump/rsdump/layout"
	"github.com/rsdump/rsdump/pack"
	"github.com/rsdump/rsdump/resourcesync"
	"github.com/rsdump/rsdump/unpack"
)

// commitTrace records the commit points a run passes, one letter each:
// s staged, d durable, c a rename, C all renamed, y synced.
func commitTrace(t *testing.T) *trace {
	tr := &trace{}
	letters := map[string]string{unpack.HookStaged: "s", unpack.HookDurable: "d", unpack.HookCommit: "c",
		unpack.HookCommitted: "C", unpack.HookSynced: "y"}
	unpack.SetHook(func(point string, _ int) {
		tr.mu.Lock()
		tr.b.WriteString(letters[point])
		tr.mu.Unlock()
	})
	t.Cleanup(func() { unpack.SetHook(func(string, int) {}) })
	return tr
}

// trace is the commit points passed, from any goroutine: a Change Dump
// package is staged while the one before it commits.
type trace struct {
	mu sync.Mutex
	b  strings.Builder
}

func (t *trace) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.b.String()
}

func (t *trace) Reset() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b.Reset()
}

// TestCommitOrder checks the order of the batched commit, package by
// package, for a Resource Dump and a Change Dump alike: every bitstream
// is staged, then all are made durable in one step, then renamed, then
// the renames are made durable, and only then is the written log
// appended. A rename before the durable step would let a crash leave a
// final name on data not yet on disk. It also counts the renames: a
// directory the tree does not have yet is moved in whole, one rename for
// its files; into a directory the tree has, each file is renamed.
func TestCommitOrder(t *testing.T) {
	out := packDir(t, tree(t, manyFiles(30, 100)), pack.Options{Compress: pack.Store, MaxEntries: 10})
	trace := commitTrace(t)
	if res, fs := run(t, filepath.Join(out, layout.DumpName), t.TempDir(), unpack.Options{Jobs: 1}); res.Problems() != 0 {
		t.Fatalf("%+v\n%s", res, dump(fs))
	}
	// 30 files in d0..d6, 10 a package in name order: the first package
	// holds d0 and d1 (two new directories), the second d2, d3 and the
	// start of d4 (three), the third the rest of d4 (two files into a
	// directory now there), d5 and d6 (two).
	if got, want := trace.String(), "sdccCy"+"sdcccCy"+"sdccccCy"; got != want {
		t.Errorf("Resource Dump commit points %q, want %q", got, want)
	}

	p1 := verifytest.ChangePackage{From: at(1, 0), Until: at(2, 0)}
	p2 := verifytest.ChangePackage{From: at(2, 0), Until: at(3, 0)}
	for i := range 4 {
		rel := fmt.Sprintf("c/%d.txt", i)
		p1.Changes = append(p1.Changes, change(resourcesync.ChangeCreated, rel, "v1 "+rel, at(1, 1)))
	}
	p2.Changes = append(p2.Changes, change(resourcesync.ChangeUpdated, "c/0.txt", "v2", at(2, 1)),
		change(resourcesync.ChangeDeleted, "c/1.txt", "", at(2, 2)))
	doc := verifytest.ChangeDump(t, t.TempDir(), []verifytest.ChangePackage{p1, p2})
	trace.Reset()
	if res, fs := run(t, doc, t.TempDir(), unpack.Options{AllowGap: true}); res.Problems() != 0 {
		t.Fatalf("%+v\n%s", res, dump(fs))
	}
	// c/ is new: one rename for its four files; then one for the update.
	// The second package is staged while the first commits, so its "s"
	// falls anywhere after the first's; the commits keep their order.
	got := trace.String()
	if commits := strings.ReplaceAll(got, "s", ""); !strings.HasPrefix(got, "s") || strings.Count(got, "s") != 2 || commits != "dcCy"+"dcCy" {
		t.Errorf("Change Dump commit points %q, want two packages staged (s) and committed in order (dcCydcCy)", got)
	}
}
