package replica_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/rsdump/rsdump/internal/httpc/httpctest"
	"github.com/rsdump/rsdump/pack"
	"github.com/rsdump/rsdump/replica"
)

// TestSyncRetriesDocuments syncs from a Source whose every document (the
// Source Description, the Capability List, the dump document, each
// detached manifest) answers 503 once: each is asked again, and the sync
// ends with the whole tree. Before the one opener retried, the first 503
// failed the sync.
func TestSyncRetriesDocuments(t *testing.T) {
	t.Parallel()
	s := newSource(t, files(6, 300))
	s.packDump(pack.Options{})
	f := httpctest.FailingFirst(http.FileServer(http.Dir(s.out)), http.StatusServiceUnavailable, 1, func(p string) bool {
		return strings.HasSuffix(p, ".xml") || strings.HasPrefix(p, "/.well-known/")
	})
	s.handler = func(http.Handler) http.Handler { return f }
	dst := t.TempDir()
	res, fs, _ := syncRun(t, s.srv.URL, dst, replica.Options{})
	if res.Problems() != 0 {
		t.Fatalf("%+v\n%s", res, problems(fs))
	}
	sameTree(t, dst, s.files)
	if n := f.Refused.Load(); n < 4 {
		t.Errorf("%d documents answered 503, want the description, capability list, dump document and manifests", n)
	}
}
