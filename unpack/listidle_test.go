package unpack_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/rsdump/rsdump/internal/httpc/httpctest"
	"github.com/rsdump/rsdump/internal/verifytest"
	"github.com/rsdump/rsdump/resourcesync"
	"github.com/rsdump/rsdump/transfer"
	"github.com/rsdump/rsdump/unpack"
)

// TestListIdleClosingServer (issue 39, point 5): a server that closes
// connections idle for a millisecond, after writing a 408 or silently,
// costs requests sent again, never a file: all 3,000 resources of a list
// land, exact, through sync's client. Before, a 408 that crossed a
// request was taken for its answer (174 of 3,000 missing).
func TestListIdleClosingServer(t *testing.T) {
	t.Parallel()
	n := 3000
	if testing.Short() {
		n = 1000
	}
	for _, with408 := range []bool{true, false} {
		t.Run(fmt.Sprintf("408-%v", with408), func(t *testing.T) {
			t.Parallel()
			s := &listSource{t: t, serve: map[string]string{}}
			url, closed := httpctest.IdleClosing(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				body, ok := s.serve[r.URL.Path]
				if !ok {
					http.NotFound(w, r)
					return
				}
				fmt.Fprint(w, body)
			}), time.Millisecond, with408)
			s.base = url + "/res/"
			var urls []resourcesync.URL
			want := map[string]string{}
			for i := range n {
				rel, data := fmt.Sprintf("d%02d/f%04d.txt", i%50, i), fmt.Sprintf("resource %d of the list", i)
				urls = append(urls, s.entry(rel, data, data))
				want[rel] = data
			}
			s.serve["/resourcelist.xml"] = string(verifytest.Encode(t, resourcesync.Header{Kind: resourcesync.URLSet,
				MD: resourcesync.MD{Capability: resourcesync.CapResourceList, At: fixedTime}}, urls))
			loc := url + "/resourcelist.xml"
			s.client = transfer.NewClient(transfer.Options{})
			dst := t.TempDir()
			r, fs := s.apply(loc, dst, unpack.Options{Fetches: 16})
			if r.Written != n || r.Refused != 0 {
				t.Errorf("%+v, want %d written\n%.2000s", r, n, dump(fs))
			}
			got := contents(readTree(t, dst))
			for rel, data := range want {
				if got[rel] != data {
					t.Errorf("%s: %q, want %q", rel, got[rel], data)
					break
				}
			}
			if closed.Load() == 0 {
				t.Error("the server closed no connection idle: the test tested nothing")
			}
			t.Logf("%d connections closed idle", closed.Load())
		})
	}
}
