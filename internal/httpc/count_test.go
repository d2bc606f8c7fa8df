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
// context are counted, over HTTP/1.1 and h2c alike, a retried request's
// once; a context without the count counts nothing.
func TestWithCount(t *testing.T) {
	t.Parallel()
	body := strings.Repeat("x", 10000)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, body) }))
	var p http.Protocols
	p.SetHTTP1(true)
	p.SetUnencryptedHTTP2(true)
	srv.Config.Protocols = &p
	srv.Start()
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
	read(Open(ctx, New(Options{H2C: H2CNever}), srv.URL+"/a", 1<<20))
	read(Open(ctx, New(Options{H2C: H2CAlways}), srv.URL+"/b", 1<<20))
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/c", nil)
	if _, rc, err := DoRetry(New(Options{}), req, 1<<20); err == nil {
		read(rc, nil)
	} else {
		t.Fatal(err)
	}
	read(Open(context.Background(), New(Options{}), srv.URL+"/d", 1<<20))
	if got := n.Load(); got != 3*int64(len(body)) {
		t.Errorf("counted %d bytes, want %d", got, 3*len(body))
	}
}
