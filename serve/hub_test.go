package serve_test

import (
	"net/http"
	"testing"

	"github.com/rsdump/rsdump/serve"
)

// TestHubMount: Options.Hub answers every method at /hub and under /hub/,
// and nothing else; its requests are logged like the others.
func TestHubMount(t *testing.T) {
	t.Parallel()
	hub := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Hub", r.Method+" "+r.URL.Path)
		w.WriteHeader(http.StatusTeapot)
	})
	s := newSite(t, files(3), serve.Options{Hub: hub})
	for _, tc := range []struct {
		method, path string
		hub          bool
	}{
		{http.MethodPost, "/hub", true}, {http.MethodGet, "/hub/framework", true}, {http.MethodGet, "/hub", true},
		{http.MethodGet, "/hubx", false}, {http.MethodPost, "/dump/resourcedump.xml", false}, {http.MethodGet, "/dump/resourcedump.xml", false},
	} {
		resp, _ := do(t, tc.method, s.URL+tc.path)
		if got := resp.Header.Get("X-Hub") != ""; got != tc.hub || tc.hub && resp.StatusCode != http.StatusTeapot {
			t.Errorf("%s %s: HTTP %d, to the hub %v, want %v", tc.method, tc.path, resp.StatusCode, got, tc.hub)
		}
	}
	found := false
	for _, r := range s.logs.all() {
		found = found || r.Method == http.MethodPost && r.Path == "/hub" && r.Status == http.StatusTeapot
	}
	if !found {
		t.Errorf("the hub's requests are not logged: %+v", s.logs.all())
	}
}
