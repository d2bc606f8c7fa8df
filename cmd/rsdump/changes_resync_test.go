package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/rsdump/rsdump/internal/sharedtest"
	"github.com/rsdump/rsdump/pack"
	"github.com/rsdump/rsdump/resourcesync"
	"github.com/rsdump/rsdump/verify/verifytest"
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
// from our resourcelist.xml and then, after each generation of the
// Source, applies the changelist.xml pack --changes wrote with
// resync-sync --incremental, fetching the resources from the Source over
// loopback HTTP: it needs every change's datetime. Its Destination ends
// where rsdump unpack's does: the Source's files, with the Source's
// mtimes (resync sets them from <lastmod>, the resource's own time).
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
		if outp, err := peer.Run(ctx, work, "resync-sync", args...); err != nil {
			t.Fatalf("resync-sync %v: %v\n%s", args, err, outp)
		}
	}

	rsdumpOK(t, append([]string{"pack", s.dir, "-o", out, "-q", "--at", hour(0)}, base...)...)
	rsdumpOK(t, append([]string{"unpack", filepath.Join(out, pack.DumpName), "--dest", dst}, base...)...)
	resync("--baseline")
	verifytest.SameFiles(t, "resync baseline", decoded(t, treeFiles(t, rdst)), treeFiles(t, s.dir))

	for i, g := range srcGenerations {
		s.now = verifytest.Time.Add(time.Duration(i)*time.Hour + 30*time.Minute)
		g(s)
		what := "generation " + strconv.Itoa(i+1)
		rsdumpOK(t, append([]string{"pack", "--changes", s.dir, "-o", out, "-q", "--at", hour(i + 1)}, base...)...)
		rsdumpOK(t, append([]string{"unpack", filepath.Join(out, "changedump.xml"), "--dest", dst}, base...)...)
		resync("--incremental", "--changelist-uri", srv.URL+"/out/changelist.xml", "--delete")
		verifytest.SameFiles(t, what+": rsdump", treeFiles(t, dst), treeFiles(t, s.dir))
		verifytest.SameFiles(t, what+": resync", decoded(t, treeFiles(t, rdst)), treeFiles(t, dst))
		sameMtimes(t, what+": rsdump", mtimes(t, dst), mtimes(t, s.dir))
		sameMtimes(t, what+": resync", decoded(t, mtimes(t, rdst)), mtimes(t, s.dir))
	}
}
