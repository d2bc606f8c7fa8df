package unpack

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rsdump/rsdump/deststate"
	"github.com/rsdump/rsdump/finding"
	"github.com/rsdump/rsdump/internal/digest"
	"github.com/rsdump/rsdump/internal/verifytest"
	"github.com/rsdump/rsdump/pkgread"
)

// A document may list one package URL twice, and jobs run in parallel:
// a second download of the URL, here one that fails its check, must not
// touch the first one's verified copy.
func TestDownloadsOfOneURLDoNotShareACacheFile(t *testing.T) {
	t.Parallel()
	z, _ := verifytest.Package(t, []verifytest.File{{Rel: "a.txt", Data: "a1"}})
	var bad atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body := z
		if bad.Load() {
			body = verifytest.Flip(z, 40) // the same length, another hash
		}
		http.ServeContent(w, r, "p.zip", time.Time{}, bytes.NewReader(body))
	}))
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	d, err := openDest(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.close()
	u := newUnpacker(Options{Client: srv.Client()}, d)
	want, _ := digest.Parse("sha-256:" + verifytest.SHA256(z))
	ref := pkgread.PackageRef{Loc: srv.URL + "/p.zip", Length: int64(len(z)), Want: want}
	rep := finding.NewReporter(nil)
	first, ok, err := u.open(context.Background(), ref, rep)
	if !ok || err != nil {
		t.Fatalf("first download: ok %v, %v", ok, err)
	}
	bad.Store(true)
	if _, ok, err := u.open(context.Background(), ref, rep); ok || err != nil {
		t.Fatalf("second download: ok %v, %v", ok, err)
	}
	got := make([]byte, first.size)
	if _, err := first.ra.ReadAt(got, 0); err != nil || !bytes.Equal(got, z) {
		t.Fatalf("the first download's copy changed under it (%v)", err)
	}
	first.close()
	if entries, _ := os.ReadDir(filepath.Join(dir, deststate.DirName, deststate.CacheDir)); len(entries) != 0 {
		t.Errorf("cache not emptied: %v", entries)
	}
}
