package unpack_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rsdump/rsdump/deststate"
	"github.com/rsdump/rsdump/finding"
	"github.com/rsdump/rsdump/resourcesync"
	"github.com/rsdump/rsdump/unpack"
)

// twoParts publishes a Resource List index of two parts, whose entries
// are the files named, each holding its name.
func twoParts(s *listSource, part1, part2 []string) string {
	md := resourcesync.MD{Capability: resourcesync.CapResourceList, At: fixedTime}
	var parts []resourcesync.URL
	for i, names := range [][]string{part1, part2} {
		var urls []resourcesync.URL
		for _, n := range names {
			urls = append(urls, s.entry(n, n, n))
		}
		parts = append(parts, resourcesync.URL{Loc: s.doc(fmt.Sprintf("part%d.xml", i+1), resourcesync.Header{Kind: resourcesync.URLSet, MD: md}, urls)})
	}
	return s.doc("resourcelist.xml", resourcesync.Header{Kind: resourcesync.SitemapIndex, MD: md}, parts)
}

// holdPart2 makes s answer /part2.xml only once n resources have been
// asked for, or after wait; the result says whether they were.
func holdPart2(s *listSource, n int64, wait time.Duration) *atomic.Bool {
	var asked atomic.Int64
	reached := make(chan struct{})
	var once sync.Once
	held := &atomic.Bool{}
	s.before = func(path string) {
		switch {
		case strings.HasPrefix(path, "/res/"):
			if asked.Add(1) >= n {
				once.Do(func() { close(reached) })
			}
		case path == "/part2.xml":
			select {
			case <-reached:
				held.Store(true)
			case <-time.After(wait):
			}
		}
	}
	return held
}

// noneStaged fails t if a staged file is left in dst.
func noneStaged(t *testing.T, dst string) {
	t.Helper()
	filepath.WalkDir(filepath.Join(dst, deststate.DirName, "tmp"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			t.Errorf("left behind: %s", p)
		}
		return nil
	})
}

// TestListFirstBatchDuringSurvey: a Resource List's first batch is
// fetched while the rest of the list is still read. The server holds the
// list's second part until the first part's resources have been asked
// for (5 s at most): before, nothing was fetched until every part was
// read, and the part went out on the time-out. A resource the first
// batch names twice is refused the second time, as the survey of the
// whole list says.
func TestListFirstBatchDuringSurvey(t *testing.T) {
	unpack.SetListBatch(t, 4)
	s := newListSource(t)
	loc := twoParts(s, []string{"a", "b", "a", "c", "d", "e"}, []string{"f", "g", "h"})
	held := holdPart2(s, 3, 5*time.Second) // a, b, c: the first batch
	dst := t.TempDir()
	r, fs := s.apply(loc, dst, unpack.Options{})
	if !held.Load() {
		t.Error("the second part was read before the first batch was fetched")
	}
	if r.Written != 8 || r.Refused != 1 {
		t.Errorf("%+v, want 8 written and 1 refused\n%s", r, dump(fs))
	}
	refused := 0
	for _, f := range fs {
		if f.Severity == finding.Error && f.Path == "a" && strings.Contains(f.Msg, "entry 3 lands on the same file as entry 1") {
			refused++
		}
	}
	if refused != 1 {
		t.Errorf("%d errors refuse entry 3, want 1\n%s", refused, dump(fs))
	}
	want := map[string]string{}
	for _, n := range []string{"a", "b", "c", "d", "e", "f", "g", "h"} {
		want[n] = n
	}
	equalMaps(t, "tree", contents(readTree(t, dst)), want)
	noneStaged(t, dst)
}

// TestListFailsAfterFirstBatchStaged: a list whose second part cannot be
// read fails the run once its first batch is staged: nothing lands, and
// the staged files go.
func TestListFailsAfterFirstBatchStaged(t *testing.T) {
	unpack.SetListBatch(t, 4)
	s := newListSource(t)
	loc := twoParts(s, []string{"a", "b", "c", "d", "e"}, []string{"f"})
	s.serve["/part2.xml"] = `<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>`
	held := holdPart2(s, 4, 5*time.Second)
	m, err := deststate.NewMapper(deststate.ByURI, s.base)
	if err != nil {
		t.Fatal(err)
	}
	dst := t.TempDir()
	_, err = unpack.ApplyList(context.Background(), loc, dst, unpack.Options{Mapper: m, Client: s.srv.Client()})
	if err == nil || !strings.Contains(err.Error(), "part2.xml") {
		t.Errorf("error %v, want one naming part2.xml", err)
	}
	if !held.Load() {
		t.Error("the second part was read before the first batch was fetched")
	}
	if got := readTree(t, dst); len(got) != 0 {
		t.Errorf("the tree holds %v, want nothing", got)
	}
	noneStaged(t, dst)
}

// TestListBatchStagedWhileCommitting: a list's next batch is fetched
// while a batch commits. The first commit waits (5 s at most) for the
// server to be asked for a resource of the second batch; before, the
// second batch was fetched only once the first had committed.
func TestListBatchStagedWhileCommitting(t *testing.T) {
	unpack.SetListBatch(t, 4)
	s := newListSource(t)
	names := []string{"a", "b", "c", "d", "e", "f", "g", "h"}
	var urls []resourcesync.URL
	want := map[string]string{}
	for _, n := range names {
		urls = append(urls, s.entry(n, n, n))
		want[n] = n
	}
	loc := s.doc("resourcelist.xml", resourcesync.Header{Kind: resourcesync.URLSet,
		MD: resourcesync.MD{Capability: resourcesync.CapResourceList, At: fixedTime}}, urls)
	second := make(chan struct{})
	var once sync.Once
	s.before = func(path string) {
		if strings.HasPrefix(path, "/res/") && strings.TrimPrefix(path, "/res/") >= "e" {
			once.Do(func() { close(second) })
		}
	}
	var overlapped, commits atomic.Int64
	unpack.SetHook(func(point string, _ int) {
		if point != unpack.HookCommitted || commits.Add(1) != 1 {
			return
		}
		select {
		case <-second:
			overlapped.Add(1)
		case <-time.After(5 * time.Second):
		}
	})
	t.Cleanup(func() { unpack.SetHook(func(string, int) {}) })
	dst := t.TempDir()
	r, fs := s.apply(loc, dst, unpack.Options{})
	if overlapped.Load() != 1 {
		t.Error("the second batch was not fetched while the first committed")
	}
	if r.Written != 8 || commits.Load() != 2 {
		t.Errorf("%+v in %d commits, want 8 written in 2\n%s", r, commits.Load(), dump(fs))
	}
	equalMaps(t, "tree", contents(readTree(t, dst)), want)
	noneStaged(t, dst)
}

// TestListPathConflictAcrossBatches: where a file of one batch is on the
// path of a file of a later batch, or the other way round, the later
// entry is refused and the earlier lands, whether the later batch was
// staged before or after the earlier one committed (batches of one
// entry, ten runs).
func TestListPathConflictAcrossBatches(t *testing.T) {
	unpack.SetListBatch(t, 1)
	s := newListSource(t)
	var urls []resourcesync.URL
	for _, n := range []string{"d", "d/under", "e/under", "e", "x"} {
		urls = append(urls, s.entry(n, n, n))
	}
	loc := s.doc("resourcelist.xml", resourcesync.Header{Kind: resourcesync.URLSet,
		MD: resourcesync.MD{Capability: resourcesync.CapResourceList, At: fixedTime}}, urls)
	for run := range 10 {
		dst := t.TempDir()
		r, fs := s.apply(loc, dst, unpack.Options{})
		if r.Written != 3 || r.Refused != 2 {
			t.Errorf("run %d: %+v, want 3 written and 2 refused\n%s", run, r, dump(fs))
		}
		for _, f := range fs {
			if f.Severity == finding.Error && f.Path != "d/under" && f.Path != "e" {
				t.Errorf("run %d: refused %s, want d/under and e only\n%s", run, f.Path, dump(fs))
			}
		}
		equalMaps(t, "tree", contents(readTree(t, dst)), map[string]string{"d": "d", "e/under": "e/under", "x": "x"})
		noneStaged(t, dst)
	}
}

// TestListStagingFailsMidList: a batch whose staging fails (its staging
// directory gone under it) ends the run with an error naming the file,
// once the batches before it have landed, and before the batch after it
// is fetched; nothing of it lands, nothing stays staged, and the list is
// not recorded as applied.
func TestListStagingFailsMidList(t *testing.T) {
	unpack.SetListBatch(t, 4)
	s := newListSource(t)
	var urls []resourcesync.URL
	for _, n := range strings.Split("abcdefghijkl", "") {
		urls = append(urls, s.entry(n, n, n))
	}
	loc := s.doc("resourcelist.xml", resourcesync.Header{Kind: resourcesync.URLSet,
		MD: resourcesync.MD{Capability: resourcesync.CapResourceList, At: fixedTime}}, urls)
	dst := t.TempDir()
	tmp := filepath.Join(dst, deststate.DirName, "tmp")
	var mu sync.Mutex
	var asked []string
	removed := false
	s.before = func(path string) {
		mu.Lock()
		defer mu.Unlock()
		asked = append(asked, strings.TrimPrefix(path, "/res/"))
		if path != "/res/e" {
			return
		}
		// e is the second batch's first: once the first batch's staging
		// directory is gone (it committed), the second's goes too.
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			var dirs []string
			ents, _ := os.ReadDir(tmp)
			for _, e := range ents {
				if e.IsDir() { // not the survey's spool
					dirs = append(dirs, e.Name())
				}
			}
			if len(dirs) == 1 {
				removed = os.RemoveAll(filepath.Join(tmp, dirs[0])) == nil
				return
			}
		}
	}
	m, err := deststate.NewMapper(deststate.ByURI, s.base)
	if err != nil {
		t.Fatal(err)
	}
	_, err = unpack.ApplyList(context.Background(), loc, dst, unpack.Options{Mapper: m, Client: s.srv.Client(), Fetches: 1})
	if !removed {
		t.Fatal("the second batch's staging directory was not found alone")
	}
	if err == nil || !strings.Contains(err.Error(), "staging f") {
		t.Errorf("error %v, want one naming the staging of f", err)
	}
	equalMaps(t, "tree", contents(readTree(t, dst)), map[string]string{"a": "a", "b": "b", "c": "c", "d": "d"})
	for _, n := range asked {
		if n >= "i" && n <= "l" {
			t.Errorf("%s of the third batch was fetched after the second failed (asked: %v)", n, asked)
		}
	}
	noneStaged(t, dst)
	if st := readState(t, dst); !st.ResourceDumpAt.IsZero() {
		t.Errorf("the list is recorded as applied: %+v", st)
	}
}
