package httpc

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// A URL naming a user and password is sent with its basic
// authorization, as Open (http.Client) sends it: the pipeline's own
// requests went without, and a server asking for it answered 401.
func TestPipelineUserinfo(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != "who" || p != "secret" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		fmt.Fprint(w, "body of "+r.URL.Path)
	}))
	defer srv.Close()
	base := strings.Replace(srv.URL, "http://", "http://who:secret@", 1)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c := leanClient()
	if b, err := readAll(Open(ctx, c, base+"/open", 1<<20)); err != nil || b != "body of /open" {
		t.Fatalf("Open: %q, %v", b, err)
	}
	p := NewPipeline(c, 8)
	defer p.Close()
	ps := paths(4)
	for _, q := range ps {
		p.Add(base + q)
	}
	for _, q := range ps {
		if b, err := readAll(p.Next(ctx, base+q, 1<<20)); err != nil || b != "body of "+q {
			t.Errorf("%s: %q, %v; Open got it", q, b, err)
		}
	}
}
