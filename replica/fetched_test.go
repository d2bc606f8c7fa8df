package replica_test

import (
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/rsdump/rsdump/pack"
	"github.com/rsdump/rsdump/replica"
)

// TestDryRunFetchesManifestsOnce: a dry run of a dump of several remote
// packages reads each detached manifest once (the survey of their
// targets keeps it for planning, where it fetched it twice), and no
// package.
func TestDryRunFetchesManifestsOnce(t *testing.T) {
	t.Parallel()
	s := newSource(t, files(20, 100))
	var mu sync.Mutex
	asked := map[string]int{}
	s.handler = func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			asked[r.URL.Path]++
			mu.Unlock()
			h.ServeHTTP(w, r)
		})
	}
	s.packDump(pack.Options{MaxEntries: 5})
	res, fs, _ := syncRun(t, s.srv.URL+"/", t.TempDir(), replica.Options{DryRun: true, BaseURL: s.base})
	if res.Problems() != 0 || res.Written != 20 {
		t.Fatalf("%+v\n%s", res, problems(fs))
	}
	manifests := 0
	for path, n := range asked {
		switch {
		case strings.HasSuffix(path, ".manifest.xml"):
			manifests++
			if n != 1 {
				t.Errorf("%s fetched %d times", path, n)
			}
		case strings.HasSuffix(path, ".zip"):
			t.Errorf("a dry run fetched %s", path)
		}
	}
	if manifests != 4 {
		t.Errorf("%d manifests fetched, want 4: %v", manifests, asked)
	}
}
