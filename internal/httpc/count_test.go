package httpc

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// TestWithCount: the body bytes of every response under a counting
// context are counted, however the request went: net/http's Transport
// (a client that negotiates compression), lean, a pipeline; a context
// without the count counts nothing.
func TestWithCount(t *testing.T) {
	t.Parallel()
	body := strings.Repeat("x", 10000)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, body) }))
	defer srv.Close()
	var n atomic.Int64
	ctx := WithCount(context.Background(), &n)
	read := func(rc io.ReadCloser, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, rc)
		rc.Close()
	}
	read(Open(ctx, New(Options{}), srv.URL+"/a", 1<<20))
	read(Open(ctx, leanClient(), srv.URL+"/b", 1<<20))
	p := NewPipeline(leanClient(), 4)
	for _, u := range []string{"/c", "/d", "/e"} {
		p.Add(srv.URL + u)
	}
	for _, u := range []string{"/c", "/d", "/e"} {
		read(p.Next(ctx, srv.URL+u, 1<<20))
	}
	read(Open(context.Background(), leanClient(), srv.URL+"/f", 1<<20))
	if got := n.Load(); got != 5*int64(len(body)) {
		t.Errorf("counted %d bytes, want %d", got, 5*len(body))
	}
}
