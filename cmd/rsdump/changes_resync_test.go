package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rsdump/rsdump/internal/sharedtest"
	"github.com/rsdump/rsdump/internal/verifytest"
	"github.com/rsdump/rsdump/layout"
	"github.com/rsdump/rsdump/resourcesync"
)

// decoded returns files' map with each path percent-decoded: resync maps a
// URI to a file by its text, not decoding it (resync/mapper.py,
// Map.src_to_dst), so a resource at .../sp%20ace/x.txt lands in a file
// named "sp%20ace/x.txt". That is resync's bug: the URI names the file
// "sp ace/x.txt", as rsdump unpack, a browser or wget -x would save it.
func decoded[V any](t *testing.T, m map[string]V) map[string]V {
	t.Helper()
	out := map[string]V{}
	for k, v := range m {
		d, err := url.PathUnescape(k)
		if err != nil {
			t.Fatalf("%s: %v", k, err)
		}
		out[d] = v
	}
	return out
}

// TestResyncIncrementalFromOurChangelist: resync 2.0.2, the reference
// Destination, with its defaults (ResourceSync 1.1), takes a baseline
// from our resourcelist.xml and then applies the Change Lists pack
// --changes wrote, one per run, with resync-sync --incremental, fetching
// the resources from the Source over loopback HTTP: it needs every
// change's datetime. Its Destination ends where rsdump unpack's does: the Source's files, with the Source's mtimes (resync sets them
// from <lastmod>, the resource's own time).
//
// resync reads one Change List per run and cannot read a Change List
// Index: ChangeList.read takes the index's <sitemap> entries for changes
// and fails on their missing change attribute (ChangeTypeError), and
// would then call list.add on its parts' entries. So the test follows
// changelist.xml, the index, for it, as §12.1 tells a Destination: each
// closed Change List after the last it applied, in the index's order.
// resync is not let fall behind: catching up list by list, it fetches the
// resources an earlier list updated as the Source has them now, and one a
// later list deletes is gone (404): resync stops with a FatalError (and
// exit status 0). rsdump sync catches up many runs at once (replica's
// TestSyncFollowsIndexes).
func TestResyncIncrementalFromOurChangelist(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the resync peer; skipped with -short")
	}
	peer := sharedtest.NewResync(t)
	s := &srcTree{t: t, dir: t.TempDir(), now: verifytest.Time.Add(-time.Hour)}
	for rel, data := range map[string]string{"a.txt": "a\n", "gone.txt": "gone\n", "old/name.txt": "moved later\n",
		"twice.txt": "t0", "back.txt": "back\n", "keep/k.txt": "unchanged\n", "sp ace/ü.txt": "unicode\n"} {
		s.write(rel, data)
	}
	out, dst, rdst, work := t.TempDir(), t.TempDir(), t.TempDir(), t.TempDir()
	mux := http.NewServeMux()
	mux.Handle("/base/", http.StripPrefix("/base/", http.FileServer(http.Dir(s.dir))))
	mux.Handle("/out/", http.StripPrefix("/out/", http.FileServer(http.Dir(out))))
	srv := httptest.NewServer(mux)
	defer srv.Close()
	baseURL := srv.URL + "/base/"
	base := []string{"--base-url", baseURL}
	hour := func(i int) string { return resourcesync.FormatTime(verifytest.Time.Add(time.Duration(i) * time.Hour)) }
	resync := func(args ...string) {
		t.Helper()
		args = append(args, "--sitemap", srv.URL+"/out/resourcelist.xml", baseURL+"="+rdst)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		// resync reports a fatal error and exits 0 all the same.
		if outp, err := peer.Run(ctx, work, "resync-sync", args...); err != nil || strings.Contains(outp, "FatalError") {
			t.Fatalf("resync-sync %v: %v\n%s", args, err, outp)
		}
	}

	rsdumpOK(t, append([]string{"pack", s.dir, "-o", out, "-q", "--at", hour(0)}, base...)...)
	rsdumpOK(t, append([]string{"unpack", filepath.Join(out, layout.DumpName), "--dest", dst}, base...)...)
	resync("--baseline")
	verifytest.SameFiles(t, "resync baseline", decoded(t, treeFiles(t, rdst)), treeFiles(t, s.dir))

	applied := 0 // the Change Lists resync applied
	for i, g := range srcGenerations {
		s.now = verifytest.Time.Add(time.Duration(i)*time.Hour + 30*time.Minute)
		g(s)
		what := "generation " + strconv.Itoa(i+1)
		rsdumpOK(t, append([]string{"pack", "--changes", s.dir, "-o", out, "-q", "--at", hour(i + 1)}, base...)...)
		rsdumpOK(t, append([]string{"unpack", filepath.Join(out, "changedump.xml"), "--dest", dst}, base...)...)
		verifytest.SameFiles(t, what+": rsdump", treeFiles(t, dst), treeFiles(t, s.dir))
		sameMtimes(t, what+": rsdump", mtimes(t, dst), mtimes(t, s.dir))
		h, lists := verifytest.ReadDoc(t, filepath.Join(out, layout.ChangeListName))
		if want := min(i+1, len(srcGenerations)-1); h.Kind != resourcesync.SitemapIndex || len(lists) != want {
			t.Fatalf("%s: changelist.xml is %+v naming %d Change Lists, want an index of %d, one per run that found changes", what, h, len(lists), want)
		}
		for _, l := range lists[applied:] {
			// Named under the base URL, where pack puts its documents
			// without --dump-url; this server has them under /out/.
			resync("--incremental", "--changelist-uri", srv.URL+"/out/"+resourcesync.BaseName(l.Loc), "--delete")
		}
		applied = len(lists)
		verifytest.SameFiles(t, what+": resync", decoded(t, treeFiles(t, rdst)), treeFiles(t, dst))
		sameMtimes(t, what+": resync", decoded(t, mtimes(t, rdst)), mtimes(t, s.dir))
	}
	if applied != len(srcGenerations)-1 {
		t.Errorf("resync applied %d Change Lists, want one per generation that changed something, %d", applied, len(srcGenerations)-1)
	}
}
