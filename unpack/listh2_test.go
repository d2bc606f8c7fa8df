package unpack_test

import (
	"crypto/x509"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rsdump/rsdump/internal/httpc"
	"github.com/rsdump/rsdump/internal/verifytest"
	"github.com/rsdump/rsdump/resourcesync"
	"github.com/rsdump/rsdump/unpack"
)

// A list's resources are fetched Fetches at once over HTTP/1.1, and 8
// times as many at once (streams of one connection) once the server
// answers over HTTP/2: what a server sees in flight at most.
func TestListFetchesOverHTTP2(t *testing.T) {
	t.Parallel()
	for _, h2 := range []bool{false, true} {
		t.Run(fmt.Sprintf("h2-%v", h2), func(t *testing.T) {
			t.Parallel()
			s := &listSource{t: t, serve: map[string]string{}}
			var inFlight, most atomic.Int64
			srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				n := inFlight.Add(1)
				defer inFlight.Add(-1)
				for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
				}
				time.Sleep(20 * time.Millisecond)
				body, ok := s.serve[r.URL.Path]
				if !ok {
					http.NotFound(w, r)
					return
				}
				fmt.Fprint(w, body)
			}))
			srv.EnableHTTP2 = h2
			srv.StartTLS()
			t.Cleanup(srv.Close)
			s.base = srv.URL + "/res/"
			var urls []resourcesync.URL
			for i := range 200 {
				rel := fmt.Sprintf("f%03d.txt", i)
				urls = append(urls, s.entry(rel, rel, rel))
			}
			s.serve["/resourcelist.xml"] = string(verifytest.Encode(t, resourcesync.Header{Kind: resourcesync.URLSet,
				MD: resourcesync.MD{Capability: resourcesync.CapResourceList, At: fixedTime}}, urls))
			pool := x509.NewCertPool()
			pool.AddCert(srv.Certificate())
			s.client = httpc.New(httpc.Options{RootCAs: pool, DisableCompression: true})
			r, fs := s.apply(srv.URL+"/resourcelist.xml", t.TempDir(), unpack.Options{Fetches: 4})
			if r.Written != 200 {
				t.Fatalf("%+v\n%s", r, dump(fs))
			}
			if m := most.Load(); h2 && (m <= 4 || m > 32) || !h2 && m > 4 {
				t.Errorf("HTTP/2 %v: %d requests in flight at most, want %s", h2, m, map[bool]string{true: "5 to 32", false: "at most 4"}[h2])
			}
		})
	}
}
