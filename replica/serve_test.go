package replica_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rsdump/rsdump/internal/sharedtest"
	"github.com/rsdump/rsdump/internal/verifytest"
	"github.com/rsdump/rsdump/layout"
	"github.com/rsdump/rsdump/pack"
	"github.com/rsdump/rsdump/replica"
	"github.com/rsdump/rsdump/serve"
)

// servePair starts two loopback servers whose handlers are set later,
// once pack has written the output their URLs go into.
func servePair(t *testing.T) (a, b *httptest.Server, set func(i int, h http.Handler), hits *[2]atomic.Int64) {
	var hs [2]atomic.Pointer[http.Handler]
	hits = new([2]atomic.Int64)
	mk := func(i int) *httptest.Server {
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			hits[i].Add(1)
			if h := hs[i].Load(); h != nil {
				(*h).ServeHTTP(w, r)
				return
			}
			http.NotFound(w, r)
		}))
		t.Cleanup(s.Close)
		return s
	}
	a, b = mk(0), mk(1)
	return a, b, func(i int, h http.Handler) { hs[i].Store(&h) }, hits
}

// TestSyncFromServeMirrors packs a tree, serves the output from two
// rsdump serve handlers (the second over a copy, as a mirror), and syncs
// an empty directory from the first one's base URL alone: discovery
// through serve's /.well-known/resourcesync, packages from both mirrors.
// resync-sync --baseline from serve's Resource List (the resources served
// with --resources) ends with the same tree. Then the Source changes and
// pack --changes publishes them; rsdump sync and resync-sync
// --incremental, with its defaults, both apply its Change List.
func TestSyncFromServeMirrors(t *testing.T) {
	a, b, set, hits := servePair(t)
	tree := files(60, 30000)
	src := verifytest.Tree(t, tree)
	out := t.TempDir()
	base, dumpA, dumpB := a.URL+"/res/", a.URL+"/dump/", b.URL+"/dump/"
	mirrors := []layout.Mirror{{BaseURL: dumpA, Priority: 1}, {BaseURL: dumpB, Priority: 1}}
	o := pack.Options{BaseURL: base, DumpURL: dumpA, SourceDescription: true, MaxPackageSize: 400 << 10, Compress: pack.Store,
		Metalink: &pack.MetalinkOptions{Mirrors: mirrors, PieceLength: 64 << 10}, At: verifytest.Time.Add(time.Hour)}
	if _, err := pack.Pack(context.Background(), src, out, o); err != nil {
		t.Fatal(err)
	}
	copyDir := t.TempDir()
	if err := os.CopyFS(copyDir, os.DirFS(out)); err != nil {
		t.Fatal(err)
	}
	ha, err := serve.New(out, serve.Options{BaseURL: base, DumpURL: dumpA, Mirrors: mirrors[1:], Resources: src})
	if err != nil {
		t.Fatal(err)
	}
	hb, err := serve.New(copyDir, serve.Options{BaseURL: b.URL + "/res/", DumpURL: dumpB, Mirrors: mirrors[:1]})
	if err != nil {
		t.Fatal(err)
	}
	set(0, ha)
	set(1, hb)

	dst := t.TempDir()
	res, fs, _ := syncRun(t, a.URL, dst, replica.Options{Audit: true})
	if res.Problems() != 0 || res.Written != len(tree) || res.Audit == nil || res.Audit.Problems() != 0 {
		t.Fatalf("%+v\n%s", res, problems(fs))
	}
	if res.BaseURL != base || res.Source.Docs["resourcedump"] != dumpA+layout.DumpName {
		t.Errorf("base %s, documents %v", res.BaseURL, res.Source.Docs)
	}
	sameTree(t, dst, tree)
	if hits[1].Load() == 0 {
		t.Errorf("the second mirror served nothing")
	}

	if testing.Short() {
		return
	}
	rs := sharedtest.NewResync(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rdst, work := t.TempDir(), t.TempDir()
	outp, err := rs.Run(ctx, work, "resync-sync", "--baseline", "--sitemap", dumpA+layout.ResourceListName, base+"="+rdst)
	if err != nil {
		t.Fatalf("resync-sync --baseline: %v\n%s", err, outp)
	}
	sameTree(t, rdst, verifytest.ReadTree(t, dst))
	if _, err := os.Stat(filepath.Join(rdst, "d0")); err != nil {
		t.Errorf("resync wrote nothing: %v\n%s", err, outp)
	}

	// Changes at the Source, one at a time in the interval, one a copy
	// with an old mtime; pack --changes publishes them beside the dump.
	for rel, c := range map[string]struct {
		data  string
		mtime time.Time
	}{"d0/f000.txt": {"updated", o.At.Add(30 * time.Minute)}, "n/new.txt": {"created", verifytest.Time.Add(-time.Hour)}} {
		p := filepath.Join(src, filepath.FromSlash(rel))
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(c.data), 0o644)
		os.Chtimes(p, c.mtime, c.mtime)
		tree[rel] = c.data
	}
	os.Remove(filepath.Join(src, "d1", "f001.txt"))
	delete(tree, "d1/f001.txt")
	o.Changes, o.At = true, o.At.Add(time.Hour)
	if _, err := pack.Pack(context.Background(), src, out, o); err != nil {
		t.Fatal(err)
	}
	// The Change Dump is listed but not served: rsdump sync then applies
	// the Change List, as resync does.
	set(0, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/dump/"+layout.ChangeDumpName {
			http.NotFound(w, r)
			return
		}
		ha.ServeHTTP(w, r)
	}))
	res, fs, _ = syncRun(t, "", dst, replica.Options{})
	if res.Problems() != 0 || res.Written != 2 || res.Deleted != 1 || res.Steps[0].Doc != dumpA+layout.ChangeListName {
		t.Fatalf("incremental: %+v\n%s", res, problems(fs))
	}
	sameTree(t, dst, tree)
	// resync reads a Change List, not the Change List Index changelist.xml
	// is: it is given the one Change List the index names.
	_, lists := verifytest.ReadDoc(t, filepath.Join(out, layout.ChangeListName))
	if len(lists) != 1 {
		t.Fatalf("changelist.xml names %d Change Lists, want 1", len(lists))
	}
	outp, err = rs.Run(ctx, work, "resync-sync", "--incremental", "--delete", "--sitemap", dumpA+layout.ResourceListName,
		"--changelist-uri", lists[0].Loc, base+"="+rdst)
	if err != nil || strings.Contains(outp, "FatalError") {
		t.Fatalf("resync-sync --incremental: %v\n%s", err, outp)
	}
	sameTree(t, rdst, tree)
}
