package main

import (
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rsdump/rsdump/internal/verifytest"
	"github.com/rsdump/rsdump/layout"
	"github.com/rsdump/rsdump/resourcesync"
)

// mtimes maps every regular file under dir but rsdump's state to its
// mtime.
func mtimes(t *testing.T, dir string) map[string]time.Time {
	t.Helper()
	out := map[string]time.Time{}
	for rel, f := range verifytest.ReadTreeFiles(t, dir) {
		if f.Mode.IsRegular() {
			out[rel] = f.ModTime
		}
	}
	return out
}

// sameMtimes fails unless every file of want has its mtime in got.
func sameMtimes(t *testing.T, what string, got, want map[string]time.Time) {
	t.Helper()
	for rel, w := range want {
		if g, ok := got[rel]; ok && !g.Equal(w) {
			t.Errorf("%s: %s has mtime %s, the Source's has %s", what, rel, g.UTC(), w.UTC())
		}
	}
}

// TestChangedFileKeepsItsMtime: a file replaced at the Source by a copy
// that keeps its old mtime (cp -p) reaches the Destination with exactly
// that mtime, not the time of the pack that found the change: through
// unpack changedump.xml, and through sync from the Change List of a
// Source that publishes no Change Dump.
func TestChangedFileKeepsItsMtime(t *testing.T) {
	t.Parallel()
	s := &srcTree{t: t, dir: t.TempDir(), now: verifytest.Time.Add(-time.Hour)}
	s.write("a.txt", "a\n")
	s.write("b.txt", "b\n")
	out, dst, synced := t.TempDir(), t.TempDir(), t.TempDir()
	mux := http.NewServeMux()
	mux.Handle("/base/", http.StripPrefix("/base/", http.FileServer(http.Dir(s.dir))))
	// The Capability List names the Change Dump, which is not there: sync
	// then applies the Change List.
	mux.Handle("/out/"+layout.ChangeDumpName, http.NotFoundHandler())
	mux.Handle("/out/", http.StripPrefix("/out/", http.FileServer(http.Dir(out))))
	srv := httptest.NewServer(mux)
	defer srv.Close()
	base := []string{"--base-url", srv.URL + "/base/"}
	hour := func(i int) string { return resourcesync.FormatTime(verifytest.Time.Add(time.Duration(i) * time.Hour)) }
	packArgs := append([]string{"-o", out, "-q", "--dump-url", srv.URL + "/out/"}, base...)

	rsdumpOK(t, append([]string{"pack", s.dir, "--at", hour(0)}, packArgs...)...)
	rsdumpOK(t, append([]string{"unpack", filepath.Join(out, layout.DumpName), "--dest", dst}, base...)...)
	rsdumpOK(t, "sync", srv.URL+"/out/"+layout.CapabilityListName, "--dest", synced, "-q")

	s.now = verifytest.Time.Add(-5 * time.Hour) // older than the Resource Dump
	s.write("a.txt", "copied in with its old mtime\n")
	rsdumpOK(t, append([]string{"pack", "--changes", s.dir, "--at", hour(1)}, packArgs...)...)
	rsdumpOK(t, append([]string{"unpack", filepath.Join(out, layout.ChangeDumpName), "--dest", dst}, base...)...)
	got := rsdumpOK(t, "sync", "--dest", synced, "-v")
	if !strings.Contains(got, layout.ChangeListName) {
		t.Errorf("sync did not apply the Change List:\n%s", got)
	}
	for what, dir := range map[string]string{"unpack changedump.xml": dst, "sync from changelist.xml": synced} {
		sameTree(t, what, s.dir, dir)
		sameMtimes(t, what, mtimes(t, dir), mtimes(t, s.dir))
	}
}
