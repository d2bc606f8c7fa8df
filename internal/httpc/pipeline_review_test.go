package httpc

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
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

// A server that does not answer within the header time-out fails the
// request as Open's does, once: the pipeline sent it again through Open,
// doubling the wait (sync's --stall-timeout) and the requests.
func TestPipelineHeaderTimeoutOnce(t *testing.T) {
	var hits atomic.Int64
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			hits.Add(1)
			select {
			case <-release:
			case <-time.After(5 * time.Second):
			}
		}
		fmt.Fprint(w, "body of "+r.URL.Path)
	}))
	defer srv.Close()
	defer close(release)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c := leanClient() // 300 ms for headers
	start := time.Now()
	_, oerr := readAll(Open(ctx, c, srv.URL+"/slow", 1<<20))
	openTook, openHits := time.Since(start), hits.Swap(0)
	p := NewPipeline(c, 8)
	defer p.Close()
	p.Add(srv.URL + "/slow")
	start = time.Now()
	_, err := readAll(p.Next(ctx, srv.URL+"/slow", 1<<20))
	took := time.Since(start)
	if err == nil || oerr == nil {
		t.Fatalf("no time-out: %v, Open's %v", err, oerr)
	}
	if h := hits.Load(); h != openHits || took > openTook+200*time.Millisecond {
		t.Errorf("%d requests in %v, Open's %d in %v (%v; Open's %v)", h, took, openHits, openTook, err, oerr)
	}
	var ne net.Error
	if want := fmt.Sprintf("Get %q: ", srv.URL+"/slow"); !errors.As(err, &ne) || !ne.Timeout() || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("error %q, want a time-out as Open's %q", err, oerr)
	}
}

// A body that stalls fails with Open's StallError, one whose context is
// cancelled fails as Open's does, and the requests written behind
// them are answered whole all the same.
func TestPipelineStallAndCancel(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/stall") {
			w.Header().Set("Content-Length", "100")
			fmt.Fprint(w, "ten bytes.")
			w.(http.Flusher).Flush()
			select {
			case <-release:
			case <-time.After(5 * time.Second):
			}
			return
		}
		fmt.Fprint(w, "body of "+r.URL.Path)
	}))
	defer srv.Close()
	defer close(release)
	c := leanClient() // stalls after 300 ms
	p := NewPipeline(c, 8)
	defer p.Close()
	for _, q := range []string{"/a", "/stall1", "/b", "/stall2", "/c"} {
		p.Add(srv.URL + q)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	next := func(ctx context.Context, q string) (string, error) { return readAll(p.Next(ctx, srv.URL+q, 1<<20)) }
	if b, err := next(ctx, "/a"); b != "body of /a" || err != nil {
		t.Errorf("/a: %q, %v", b, err)
	}
	var stall *StallError
	// The stall cuts the connection: the read it waits in ends then,
	// not when the server goes on.
	if err := within(t, 2*time.Second, func() error { _, err := next(ctx, "/stall1"); return err }); !errors.As(err, &stall) {
		t.Errorf("/stall1: %v, want a StallError", err)
	}
	if b, err := next(ctx, "/b"); b != "body of /b" || err != nil {
		t.Errorf("/b: %q, %v", b, err)
	}
	cctx, ccancel := context.WithCancel(ctx)
	time.AfterFunc(100*time.Millisecond, ccancel)
	if _, err := next(cctx, "/stall2"); err == nil || errors.As(err, &stall) {
		t.Errorf("/stall2: %v, want the cancel's error (an i/o time-out, as Open's)", err)
	}
	if b, err := next(ctx, "/c"); b != "body of /c" || err != nil {
		t.Errorf("/c: %q, %v", b, err)
	}
}

// A client with a proxy fetches every URL through Open, by the proxy.
func TestPipelineProxy(t *testing.T) {
	s := newRawServer(t, 0, false)
	var proxied atomic.Int64
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		proxied.Add(1)
		fmt.Fprint(w, "body of "+r.URL.Path)
	}))
	defer proxy.Close()
	c := leanClient()
	tr := c.Transport.(*transport)
	pu, _ := url.Parse(proxy.URL)
	tr.base.Proxy = http.ProxyURL(pu)
	p := NewPipeline(c, 8)
	defer p.Close()
	ps := paths(8)
	checkBodies(t, ps, fetchAll(t, p, s, ps))
	if _, seen, _ := s.seen(); len(seen) != 0 || proxied.Load() != int64(len(ps)) {
		t.Errorf("%d requests to the server itself, %d by the proxy; want 0 and %d", len(seen), proxied.Load(), len(ps))
	}
}

// A pipelined response whose header is buffered in part (after a whole
// response, or after a whole 100 Continue) and then stalls still fails
// with the header time-out, and Open fetches it again: a header read
// with no deadline, for being partly buffered, waited for the server.
func TestPipelineHeaderPartlyBuffered(t *testing.T) {
	for name, after := range map[string]string{
		"response": "",
		"continue": "HTTP/1.1 100 Continue\r\n\r\n",
	} {
		t.Run(name, func(t *testing.T) {
			var conns atomic.Int64
			release := make(chan struct{})
			defer close(release)
			base := rawListen(t, func(c net.Conn) {
				first := conns.Add(1) == 1
				br := bufio.NewReader(c)
				for {
					if _, err := http.ReadRequest(br); err != nil {
						return
					}
					if first && br.Buffered() == 0 {
						// the first connection's second request
						io.WriteString(c, after+"HTTP/1.1 200 OK\r\nContent-Le")
						select {
						case <-release:
						case <-time.After(5 * time.Second):
						}
						return
					}
					if first {
						// both requests came in one write: one response whole
						io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
						continue
					}
					io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
				}
			})
			p := NewPipeline(leanClient(), 8) // 300 ms for headers
			defer p.Close()
			p.Add(base + "/a")
			p.Add(base + "/b")
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			for _, q := range []string{"/a", "/b"} {
				err := within(t, 2*time.Second, func() error {
					b, err := readAll(p.Next(ctx, base+q, 1<<20))
					if err == nil && b != "ok" {
						err = fmt.Errorf("body %q", b)
					}
					return err
				})
				if err != nil {
					t.Errorf("%s: %v", q, err)
				}
			}
		})
	}
}
