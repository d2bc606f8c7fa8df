package replica_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rsdump/rsdump/deststate"
	"github.com/rsdump/rsdump/finding"
	"github.com/rsdump/rsdump/internal/verifytest"
	"github.com/rsdump/rsdump/pack"
	"github.com/rsdump/rsdump/replica"
	"github.com/rsdump/rsdump/serve"
	"github.com/rsdump/rsdump/trs"
)

// TestSyncFromTRS syncs three trees from one Source across four pack
// --changes generations: one from its ResourceSync documents, one from
// serve --trs (a Base of 7 members a page, Change Log segments of 3
// events), and one from a second view truncated to its newest 2 events
// (--trs-keep 2), synced only after the first generation of changes and
// the last. After each run the trees are the same, file for file and
// mtime for mtime, every resource checked against a hash. The view that
// keeps every event is followed from the sync point the state records
// (no rebase once an event was recorded); the lagging tree finds its
// sync point truncated and rebases, which removes the files deleted
// while it was behind. It runs a second time with the consumer's sorts
// holding 2 records a run, so that its joins of members, entries, events
// and the tree's files read merged runs from disk.
func TestSyncFromTRS(t *testing.T) {
	t.Run("runs of 65536", syncFromTRS)
	t.Run("runs of 2", func(t *testing.T) {
		replica.SetTRSSortRuns(t, 2)
		syncFromTRS(t)
	})
}

func syncFromTRS(t *testing.T) {
	a, b, set, _ := servePair(t)
	tree := files(20, 100)
	src := verifytest.Tree(t, tree)
	out := t.TempDir()
	base, dump := a.URL+"/res/", a.URL+"/dump/"
	o := pack.Options{BaseURL: base, DumpURL: dump, SourceDescription: true, Compress: pack.Store, At: verifytest.Time.Add(time.Hour)}
	if _, err := pack.Pack(context.Background(), src, out, o); err != nil {
		t.Fatal(err)
	}
	full, err := serve.New(out, serve.Options{BaseURL: base, DumpURL: dump, Resources: src, TRS: &trs.Options{PageSize: 7, SegmentSize: 3}})
	if err != nil {
		t.Fatal(err)
	}
	kept, err := serve.New(out, serve.Options{BaseURL: "/res/", DumpURL: "/dump/", TRS: &trs.Options{PageSize: 7, SegmentSize: 3, Keep: 2}})
	if err != nil {
		t.Fatal(err)
	}
	set(0, full)
	set(1, kept)
	viaRS, viaTRS, lagging := t.TempDir(), t.TempDir(), t.TempDir()
	trsURL, keptURL := dump+"trs", b.URL+"/dump/trs"

	syncAll := func(gen int, lag bool) {
		t.Helper()
		res, fs, _ := syncRun(t, a.URL, viaRS, replica.Options{})
		if res.Problems() != 0 {
			t.Fatalf("generation %d, ResourceSync: %+v\n%s", gen, res, problems(fs))
		}
		res, fs, notes := syncRun(t, trsURL, viaTRS, replica.Options{})
		if res.Problems() != 0 || res.Source.TRS != trsURL {
			t.Fatalf("generation %d, TRS: %+v\n%s", gen, res, problems(fs))
		}
		if rebased := strings.Contains(strings.Join(notes, "\n"), "rebase"); rebased != (gen <= 1) {
			t.Errorf("generation %d: rebased %v; notes:\n%s", gen, rebased, strings.Join(notes, "\n"))
		}
		if res.Unverified != 0 {
			t.Errorf("generation %d: %d resources not checked against a hash", gen, res.Unverified)
		}
		want := verifytest.ReadTree(t, viaRS)
		sameTree(t, viaRS, tree)
		sameTree(t, viaTRS, want)
		sameMtimes(t, viaRS, viaTRS)
		if lag {
			res, fs, notes := syncRun(t, keptURL, lagging, replica.Options{})
			if res.Problems() != 0 {
				t.Fatalf("generation %d, truncated TRS: %+v\n%s", gen, res, problems(fs))
			}
			why := "has no copy"
			if gen > 1 {
				why = "is no longer in the Change Log"
			}
			if n := strings.Join(notes, "\n"); !strings.Contains(n, "rebase") || !strings.Contains(n, why) {
				t.Errorf("generation %d: the lagging tree did not rebase because its sync point %s; notes:\n%s", gen, why, n)
			}
			sameTree(t, lagging, want)
			sameMtimes(t, viaRS, lagging)
		}
		st, err := deststate.Read(viaTRS)
		if err != nil || st.Sync == nil || st.Sync.TRS == nil || st.Sync.TRS.Order == 0 && gen > 0 {
			t.Fatalf("generation %d: the sync point is not in the state: %+v %+v %v", gen, st.Sync, st.Sync.TRS, err)
		}
	}
	syncAll(0, false)

	at := o.At
	for gen := 1; gen <= 4; gen++ {
		at = at.Add(time.Hour)
		change := func(rel, data string) {
			p := filepath.Join(src, filepath.FromSlash(rel))
			os.MkdirAll(filepath.Dir(p), 0o755)
			os.WriteFile(p, []byte(data), 0o644)
			mt := at.Add(-time.Duration(10+len(rel)) * time.Minute)
			os.Chtimes(p, mt, mt)
			tree[rel] = data
		}
		change(fmt.Sprintf("d%d/f%03d.txt", gen%4, gen), fmt.Sprintf("updated in generation %d", gen))
		change(fmt.Sprintf("new/g%d.txt", gen), fmt.Sprintf("created in generation %d", gen))
		gone := fmt.Sprintf("d%d/f%03d.txt", (gen+1)%4, gen+9)
		os.Remove(filepath.Join(src, filepath.FromSlash(gone)))
		delete(tree, gone)
		o.Changes, o.At = true, at
		if _, err := pack.Pack(context.Background(), src, out, o); err != nil {
			t.Fatal(err)
		}
		syncAll(gen, gen == 1 || gen == 4)
	}
}

// sameMtimes fails unless the files of two trees have the same mtimes.
func sameMtimes(t *testing.T, a, b string) {
	t.Helper()
	filepath.WalkDir(a, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			if d != nil && d.Name() == deststate.DirName {
				return filepath.SkipDir
			}
			return err
		}
		rel, _ := filepath.Rel(a, p)
		fa, _ := os.Stat(p)
		fb, err := os.Stat(filepath.Join(b, rel))
		if err != nil || !fa.ModTime().Equal(fb.ModTime()) {
			t.Errorf("%s: mtime %v here, %v there (%v)", rel, fa.ModTime(), fb, err)
		}
		return nil
	})
}

// TestSyncFromTRSChecksHashes: a member whose bytes are not those the
// Source's Resource List gives a hash of (the file changed after pack) is
// refused and not written; the others land, and the sync point is not
// recorded, so the next run tries again.
func TestSyncFromTRSChecksHashes(t *testing.T) {
	t.Parallel()
	a, _, set, _ := servePair(t)
	tree := files(6, 50)
	src := verifytest.Tree(t, tree)
	out := t.TempDir()
	base, dump := a.URL+"/res/", a.URL+"/dump/"
	if _, err := pack.Pack(context.Background(), src, out, pack.Options{BaseURL: base, DumpURL: dump, At: verifytest.Time.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	h, err := serve.New(out, serve.Options{BaseURL: base, DumpURL: dump, Resources: src, TRS: &trs.Options{}})
	if err != nil {
		t.Fatal(err)
	}
	set(0, h)
	os.WriteFile(filepath.Join(src, "d1", "f001.txt"), []byte(strings.Repeat("x", 50)), 0o644) // the same length: only the hash tells
	dst := t.TempDir()
	var fs []string
	res, err := replica.Sync(context.Background(), location(t, dump+"trs"), dst, replica.Options{Events: func(e finding.Event) {
		if f, ok := e.(finding.Finding); ok && f.Severity != finding.OK {
			fs = append(fs, f.String())
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Problems() == 0 || res.Written != len(tree)-1 || !strings.Contains(strings.Join(fs, "\n"), "f001.txt") {
		t.Errorf("written %d, problems %d: %s", res.Written, res.Problems(), strings.Join(fs, "\n"))
	}
	if _, err := os.Stat(filepath.Join(dst, "d1", "f001.txt")); err == nil {
		t.Errorf("the member that fails its hash was written")
	}
	if st, _ := deststate.Read(dst); st.Sync != nil && st.Sync.TRS != nil {
		t.Errorf("a sync point recorded after a failed rebase: %+v", st.Sync.TRS)
	}
}

// TestSyncFromForeignTRS syncs from a Tracked Resource Set that is not
// rsdump's (hand-written Turtle, relative IRIs, no ResourceSync documents
// behind it), given --base-url: the Base's members and the events after
// the cutoff land, unverified (there is no hash to check; a member an
// event changes is fetched once, for the event), and a second
// run applies the new events from the sync point, a deletion and a
// modification.
func TestSyncFromForeignTRS(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	bugs := map[string]string{"1": "bug 1", "2": "bug 2", "3": "bug 3", "4": "bug 4"}
	events := `<urn:e:3> a trs:Modification ; trs:changed <bugs/3> ; trs:order 3 .
<urn:e:2> a trs:Creation ; trs:changed <bugs/4> ; trs:order 2 .
<urn:e:1> a trs:Creation ; trs:changed <bugs/3> ; trs:order 1 .
`
	changes := "<urn:e:3>, <urn:e:2>, <urn:e:1>"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		const prefix = "@prefix trs: <http://open-services.net/ns/core/trs#> .\n@prefix ldp: <http://www.w3.org/ns/ldp#> .\n"
		switch p := r.URL.Path; {
		case p == "/trs":
			w.Header().Set("Content-Type", "text/turtle")
			io.WriteString(w, prefix+"<trs> a trs:TrackedResourceSet ; trs:base <base> ; trs:changeLog [ a trs:ChangeLog ; trs:change "+changes+" ] .\n"+events)
		case p == "/base":
			http.Redirect(w, r, "/base/p1", http.StatusSeeOther)
		case p == "/base/p1":
			w.Header().Set("Content-Type", "text/turtle")
			w.Header().Set("Link", `</base/p2>; rel="next"`)
			io.WriteString(w, prefix+"<../base> a ldp:DirectContainer ; trs:cutoffEvent <urn:e:1> ; ldp:member <../bugs/1>, <../bugs/2> .\n")
		case p == "/base/p2":
			w.Header().Set("Content-Type", "text/turtle")
			io.WriteString(w, prefix+"</base> ldp:member </bugs/3> .\n")
		case strings.HasPrefix(p, "/bugs/") && bugs[p[6:]] != "":
			io.WriteString(w, bugs[p[6:]])
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	dst := t.TempDir()
	o := replica.Options{BaseURL: srv.URL + "/bugs/"}
	res, fs, notes := syncRun(t, srv.URL+"/trs", dst, o)
	want := map[string]string{"1": "bug 1", "2": "bug 2", "3": "bug 3", "4": "bug 4"}
	if res.Errors != 0 || res.Unverified != 4 || res.Written != 4 {
		t.Fatalf("%+v\n%s\n%s", res, problems(fs), strings.Join(notes, "\n"))
	}
	for _, f := range fs {
		if f.Source != srv.URL+"/base" && f.Source != srv.URL+"/trs" {
			t.Errorf("a finding names %s, not the view", f.Source)
		}
	}
	sameTree(t, dst, want)

	mu.Lock()
	bugs["1"] = "bug 1, fixed"
	delete(bugs, "2")
	events = `<urn:e:5> a trs:Deletion ; trs:changed <bugs/2> ; trs:order 5 .
<urn:e:4> a trs:Modification ; trs:changed <bugs/1> ; trs:order 4 .
` + events
	changes = "<urn:e:5>, <urn:e:4>, " + changes
	mu.Unlock()
	res, fs, notes = syncRun(t, "", dst, replica.Options{})
	if res.Errors != 0 || res.Deleted != 1 || strings.Contains(strings.Join(notes, "\n"), "rebase") {
		t.Fatalf("%+v\n%s\n%s", res, problems(fs), strings.Join(notes, "\n"))
	}
	sameTree(t, dst, map[string]string{"1": "bug 1, fixed", "3": "bug 3", "4": "bug 4"})
	if st, _ := deststate.Read(dst); st.Sync == nil || st.Sync.TRS == nil || st.Sync.TRS.Event != "urn:e:5" {
		t.Errorf("sync point %+v", st.Sync)
	}
}

// TestTRSRebaseWithoutEventsReadsNoChangeList: a tree rebasing from a
// view whose Base's cutoff is the newest event (the usual case: the Base
// is the Resource List, written with the last Change List) has no event
// to check, so it reads none of the Source's Change Lists, however many
// runs they hold; it still checks every member against the Resource
// List's hash.
func TestTRSRebaseWithoutEventsReadsNoChangeList(t *testing.T) {
	t.Parallel()
	a, _, set, _ := servePair(t)
	tree := files(6, 50)
	src := verifytest.Tree(t, tree)
	out := t.TempDir()
	base, dump := a.URL+"/res/", a.URL+"/dump/"
	o := pack.Options{BaseURL: base, DumpURL: dump, At: verifytest.Time.Add(time.Hour)}
	if _, err := pack.Pack(context.Background(), src, out, o); err != nil {
		t.Fatal(err)
	}
	for gen := 1; gen <= 3; gen++ {
		rel := fmt.Sprintf("new/g%d.txt", gen)
		os.MkdirAll(filepath.Join(src, "new"), 0o755)
		os.WriteFile(filepath.Join(src, filepath.FromSlash(rel)), []byte(rel), 0o644)
		tree[rel] = rel
		o.Changes, o.At = true, o.At.Add(time.Hour)
		if _, err := pack.Pack(context.Background(), src, out, o); err != nil {
			t.Fatal(err)
		}
	}
	h, err := serve.New(out, serve.Options{BaseURL: base, DumpURL: dump, Resources: src, TRS: &trs.Options{}})
	if err != nil {
		t.Fatal(err)
	}
	var changeLists atomic.Int64
	set(0, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.URL.Path, "changelist") {
			changeLists.Add(1)
		}
		h.ServeHTTP(w, r)
	}))
	dst := t.TempDir()
	res, fs, notes := syncRun(t, dump+"trs", dst, replica.Options{})
	if res.Problems() != 0 || res.Unverified != 0 || res.Written != len(tree) {
		t.Fatalf("%+v\n%s\n%s", res, problems(fs), strings.Join(notes, "\n"))
	}
	sameTree(t, dst, tree)
	if st, _ := deststate.Read(dst); st.Sync == nil || st.Sync.TRS == nil || st.Sync.TRS.Order != 3 {
		t.Fatalf("the sync point is not the newest event: %+v", st.Sync)
	}
	if n := changeLists.Load(); n != 0 {
		t.Errorf("a rebase with no event after the cutoff read %d Change List documents; notes:\n%s", n, strings.Join(notes, "\n"))
	}
}
