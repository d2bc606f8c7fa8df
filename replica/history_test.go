package replica_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rsdump/rsdump/internal/verifytest"
	"github.com/rsdump/rsdump/layout"
	"github.com/rsdump/rsdump/pack"
	"github.com/rsdump/rsdump/replica"
	"github.com/rsdump/rsdump/resourcesync"
)

// TestSyncFollowsIndexes: a Source runs pack --changes many times; a
// Destination that synced after the first run, and so is all the others
// behind, follows the Change Dump Index the Capability List names and
// applies every run's Change Dump in order, in one sync; another, whose
// Source's Change Dump is not served, follows the Change List Index,
// resource by resource. Both end as the Source, up to its last run.
func TestSyncFollowsIndexes(t *testing.T) {
	t.Parallel()
	runs := 30
	if testing.Short() {
		runs = 8
	}
	src, out := t.TempDir(), t.TempDir()
	hideDump := false
	var parts atomic.Int64 // requests for a part of the Change Dump Index
	mux := http.NewServeMux()
	mux.Handle("/res/", http.StripPrefix("/res/", http.FileServer(http.Dir(src))))
	mux.Handle("/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hideDump && r.URL.Path == "/"+layout.ChangeDumpName {
			http.NotFound(w, r)
			return
		}
		if strings.HasPrefix(r.URL.Path, "/changedump-part") || strings.HasPrefix(r.URL.Path, "/changelist-part") {
			parts.Add(1)
		}
		http.FileServer(http.Dir(out)).ServeHTTP(w, r)
	}))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	tree := files(12, 40)
	put := func(rel, data string, mtime time.Time) {
		p := filepath.Join(src, filepath.FromSlash(rel))
		os.MkdirAll(filepath.Dir(p), 0o755)
		write(t, p, []byte(data))
		os.Chtimes(p, mtime, mtime)
		tree[rel] = data
	}
	for rel, data := range tree {
		put(rel, data, t0.Add(-time.Hour))
	}
	packRun := func(k int) {
		t.Helper()
		o := pack.Options{BaseURL: srv.URL + "/res/", DumpURL: srv.URL + "/", At: t0.Add(time.Duration(k) * time.Hour), Changes: k > 0, SourceDescription: true}
		if _, err := pack.Pack(context.Background(), src, out, o); err != nil {
			t.Fatalf("pack run %d: %v", k, err)
		}
	}
	packRun(0)
	dumps, lists := t.TempDir(), t.TempDir()
	for _, dst := range []string{dumps, lists} {
		if res, fs, _ := syncRun(t, srv.URL+"/", dst, replica.Options{}); res.Problems() != 0 {
			t.Fatalf("baseline: %+v\n%s", res, problems(fs))
		}
	}
	// Each run updates one file, creates one and deletes one; a file is
	// updated in one run and deleted in a later one.
	for k := 1; k <= runs; k++ {
		at := t0.Add(time.Duration(k-1) * time.Hour)
		put(fmt.Sprintf("d%d/f%03d.txt", k%4, k%12), fmt.Sprintf("run %d's version", k), at.Add(10*time.Minute))
		put(fmt.Sprintf("new/r%03d.txt", k), fmt.Sprintf("created by run %d", k), at.Add(20*time.Minute))
		if k > 2 {
			rel := fmt.Sprintf("new/r%03d.txt", k-2)
			os.Remove(filepath.Join(src, filepath.FromSlash(rel)))
			delete(tree, rel)
		}
		packRun(k)
	}
	last := t0.Add(time.Duration(runs) * time.Hour)

	// The Capability List names the two indexes, each naming a document
	// per run, in time order.
	_, caps := verifytest.ReadDoc(t, filepath.Join(out, layout.CapabilityListName))
	named := map[string]string{}
	for _, c := range caps {
		named[c.MD.Capability] = c.Loc
	}
	for _, c := range []struct{ capability, name string }{{resourcesync.CapChangeList, layout.ChangeListName}, {resourcesync.CapChangeDump, layout.ChangeDumpName}} {
		if named[c.capability] != srv.URL+"/"+c.name {
			t.Errorf("the Capability List names %q for %s, want %s", named[c.capability], c.capability, c.name)
		}
		h, parts := verifytest.ReadDoc(t, filepath.Join(out, c.name))
		if h.Kind != resourcesync.SitemapIndex || len(parts) != runs {
			t.Fatalf("%s: %+v naming %d documents, want an index of %d", c.name, h.MD, len(parts), runs)
		}
		for i, p := range parts {
			if want := t0.Add(time.Duration(i) * time.Hour); !p.MD.From.Equal(want) || !p.MD.Until.Equal(want.Add(time.Hour)) {
				t.Errorf("%s: document %d covers %s to %s, want run %d's hour", c.name, i+1, p.MD.From, p.MD.Until, i+1)
			}
		}
	}

	res, fs, _ := syncRun(t, "", dumps, replica.Options{})
	if res.Problems() != 0 || len(res.Steps) != 1 || res.Steps[0].Doc != srv.URL+"/"+layout.ChangeDumpName || res.Packages != runs || !res.Until.Equal(last) {
		t.Fatalf("%d runs behind, from the Change Dump Index: %+v (steps %+v)\n%s", runs, res, res.Steps, problems(fs))
	}
	sameTree(t, dumps, tree)

	// Up to date, the next sync reads the one new part, not every run's.
	put("new/after.txt", "after the catch-up", last.Add(10*time.Minute))
	packRun(runs + 1)
	parts.Store(0)
	res, fs, _ = syncRun(t, "", dumps, replica.Options{})
	if res.Problems() != 0 || res.Packages != 1 || !res.Until.Equal(last.Add(time.Hour)) {
		t.Fatalf("one run behind: %+v\n%s", res, problems(fs))
	}
	if n := parts.Load(); n != 1 {
		t.Errorf("one run behind, the sync asked for %d parts of the indexes, want only the Change Dump's new one", n)
	}
	sameTree(t, dumps, tree)
	last = last.Add(time.Hour)

	hideDump = true
	res, fs, _ = syncRun(t, "", lists, replica.Options{})
	if res.Problems() != 0 || len(res.Steps) != 1 || res.Steps[0].Doc != srv.URL+"/"+layout.ChangeListName || !res.Until.Equal(last) {
		t.Fatalf("%d runs behind, from the Change List Index: %+v (steps %+v)\n%s", runs, res, res.Steps, problems(fs))
	}
	sameTree(t, lists, tree)

	// Up to date, the next sync from the Change List Index reads the one
	// new part.
	put("new/later.txt", "after the list catch-up", last.Add(10*time.Minute))
	packRun(runs + 2)
	parts.Store(0)
	res, fs, _ = syncRun(t, "", lists, replica.Options{})
	if res.Problems() != 0 || res.Written != 1 || !res.Until.Equal(last.Add(time.Hour)) {
		t.Fatalf("one run behind, from the Change List Index: %+v\n%s", res, problems(fs))
	}
	if n := parts.Load(); n != 1 {
		t.Errorf("one run behind, the sync asked for %d parts of the Change List Index, want only the new one", n)
	}
	sameTree(t, lists, tree)
}
