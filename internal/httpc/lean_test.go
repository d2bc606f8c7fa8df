package httpc

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rsdump/rsdump/internal/httpc/httpctest"
)

// leanClient is a client whose documents and resources go lean, with
// short waits.
func leanClient() *http.Client {
	return New(Options{ConnectTimeout: time.Second, ResponseHeaderTimeout: 300 * time.Millisecond,
		StallTimeout: 300 * time.Millisecond, DisableCompression: true, MaxIdleConnsPerHost: 4})
}

// leanServer counts the connections it accepts.
func leanServer(t *testing.T, h http.Handler) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(h)
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, &conns
}

func openAll(ctx context.Context, c *http.Client, u string) (string, error) {
	rc, err := Open(ctx, c, u, 1<<20)
	return readAll(rc, err)
}

// readAll reads and closes what an opener returned.
func readAll(rc io.ReadCloser, err error) (string, error) {
	if err != nil {
		return "", err
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	return string(b), err
}

// Documents and resources are fetched over kept-alive connections, as
// many at once as the caller asks, each answer whole: fixed lengths,
// chunked, empty, and one that ends its connection.
func TestLeanKeepsConnections(t *testing.T) {
	srv, conns := leanServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/chunked":
			w.Write([]byte("chunk-"))
			w.(http.Flusher).Flush()
			w.Write([]byte("ed"))
		case "/close":
			w.Header().Set("Connection", "close")
			w.Write([]byte("closed"))
		case "/empty":
		default:
			fmt.Fprintf(w, "body of %s", r.URL.Path)
		}
	}))
	c := leanClient()
	if !c.Transport.(*transport).lean.takes(mustReq(t, srv.URL)) {
		t.Fatal("a DoResponse GET over http is not sent lean")
	}
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 50 {
				p := fmt.Sprintf("/r%d-%d", w, i)
				want := "body of " + p
				switch i {
				case 10:
					p, want = "/chunked", "chunk-ed"
				case 20:
					p, want = "/empty", ""
				case 30:
					p, want = "/close", "closed"
				}
				if got, err := openAll(t.Context(), c, srv.URL+p); err != nil || got != want {
					t.Errorf("%s: %q, %v", p, got, err)
				}
			}
		})
	}
	wg.Wait()
	// 4 at a time, and one more after each Connection: close.
	if n := conns.Load(); n > 8 {
		t.Errorf("%d connections for 200 requests 4 at a time", n)
	}
}

func mustReq(t *testing.T, u string) *http.Request {
	req, err := http.NewRequestWithContext(context.WithValue(t.Context(), judgedKey{}, true), http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// A kept-alive connection the server closed while it was idle is not an
// error: the GET is sent again on a new one. A body closed before its end
// gives its connection up, and the next request does not read its rest.
func TestLeanServerClosedIdle(t *testing.T) {
	srv, conns := leanServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write(bytes.Repeat([]byte(r.URL.Path[1:]), 1000))
	}))
	c := leanClient()
	if got, err := openAll(t.Context(), c, srv.URL+"/a"); err != nil || got != strings.Repeat("a", 1000) {
		t.Fatalf("%d bytes, %v", len(got), err)
	}
	srv.CloseClientConnections()
	time.Sleep(50 * time.Millisecond)
	if got, err := openAll(t.Context(), c, srv.URL+"/b"); err != nil || got != strings.Repeat("b", 1000) {
		t.Fatalf("after the server closed the idle connection: %d bytes, %v", len(got), err)
	}
	rc, err := Open(t.Context(), c, srv.URL+"/c", 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	rc.Read(make([]byte, 10))
	rc.Close()
	if _, err := rc.Read(make([]byte, 10)); err == nil {
		t.Error("a read after Close succeeded")
	}
	if got, err := openAll(t.Context(), c, srv.URL+"/d"); err != nil || got != strings.Repeat("d", 1000) {
		t.Fatalf("after a body closed early: %d bytes, %v", len(got), err)
	}
	if n := conns.Load(); n != 3 {
		t.Errorf("%d connections, want 3 (the first, after the server closed it, after the early close)", n)
	}
}

// A body that stalls fails with a StallError, a silent server with the
// header timeout, a cancelled request at once, a status as a
// StatusError, and a body past the cap with ErrTooLarge; none waits.
func TestLeanFailures(t *testing.T) {
	c := leanClient()
	stall := httpctest.Stalling(t, bytes.Repeat([]byte("x"), 1000), 10)
	var se *StallError
	err := within(t, 3*time.Second, func() error { _, err := openAll(t.Context(), c, stall.URL+"/s"); return err })
	if !errors.As(err, &se) {
		t.Errorf("a stalled body: %v", err)
	}
	silent := httpctest.Silent(t)
	err = within(t, 3*time.Second, func() error { _, err := openAll(t.Context(), c, silent+"/x"); return err })
	wantURL(t, err, silent+"/x")

	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(100*time.Millisecond, cancel)
	err = within(t, 3*time.Second, func() error {
		_, err := openAll(ctx, New(Options{DisableCompression: true}), silent+"/y")
		return err
	})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}

	srv, _ := leanServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/missing" {
			http.NotFound(w, r)
			return
		}
		w.Write(bytes.Repeat([]byte("y"), 100))
	}))
	var st *StatusError
	if _, err := openAll(t.Context(), c, srv.URL+"/missing"); !errors.As(err, &st) || st.Code != 404 {
		t.Errorf("404: %v", err)
	}
	if _, err := Open(t.Context(), c, srv.URL+"/big", 50); !errors.Is(err, ErrTooLarge) {
		t.Errorf("past the cap: %v", err)
	}
	if got, err := openAll(t.Context(), c, srv.URL+"/ok"); err != nil || len(got) != 100 {
		t.Errorf("after the failures: %d bytes, %v", len(got), err)
	}
}

// What lean does not send goes to net/http: a proxy from the
// environment, https, a request that is not DoResponse's.
func TestLeanTakes(t *testing.T) {
	c := leanClient()
	l := c.Transport.(*transport).lean
	plain, _ := http.NewRequest(http.MethodGet, "http://127.0.0.1:1/x", nil)
	for name, r := range map[string]*http.Request{
		"https":      mustReq(t, "https://127.0.0.1:1/x"),
		"not judged": plain,
	} {
		if l.takes(r) {
			t.Errorf("%s: sent lean", name)
		}
	}
	t.Setenv("HTTP_PROXY", "http://127.0.0.2:3128")
	t.Setenv("NO_PROXY", "")
	c = New(Options{DisableCompression: true})
	// ProxyFromEnvironment reads the environment once per process: a
	// transport with a proxy function of its own stands for it.
	tr := c.Transport.(*transport)
	tr.base.Proxy = func(*http.Request) (*url.URL, error) { return url.Parse("http://127.0.0.2:3128") }
	if tr.lean.takes(mustReq(t, "http://127.0.0.1:1/x")) {
		t.Error("a request with a proxy: sent lean")
	}
	if New(Options{}).Transport.(*transport).lean != nil {
		t.Error("a client that negotiates compression sends lean")
	}
}

// Connections kept idle that the server closed meanwhile (its keep-alive
// time-out, shorter than ours) are all dead: a request after the pause
// is sent on a new connection, not failed on the second dead one.
func TestLeanServerClosedSeveralIdle(t *testing.T) {
	release := make(chan struct{})
	var inFlight atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if inFlight.Add(1) == 3 {
			close(release)
		}
		select { // three requests at once: three connections kept
		case <-release:
		case <-time.After(2 * time.Second):
		}
		fmt.Fprint(w, "ok")
	}))
	srv.Config.IdleTimeout = 100 * time.Millisecond
	srv.Start()
	t.Cleanup(srv.Close)
	c := leanClient()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			if got, err := openAll(ctx, c, srv.URL+"/r"); err != nil || got != "ok" {
				t.Errorf("first requests: %q, %v", got, err)
			}
		})
	}
	wg.Wait()
	time.Sleep(400 * time.Millisecond) // the server closes the three idle connections
	for i := range 3 {
		if got, err := openAll(ctx, c, srv.URL+"/r"); err != nil || got != "ok" {
			t.Fatalf("request %d after the server closed its idle connections: %q, %v", i, got, err)
		}
	}
}

// A body already buffered is not read once the request is cancelled.
func TestLeanBodyAfterCancel(t *testing.T) {
	srv, _ := leanServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, strings.Repeat("x", 1000))
	}))
	ctx, cancel := context.WithCancel(context.Background())
	rc, err := Open(ctx, leanClient(), srv.URL+"/r", 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	cancel()
	if b, err := io.ReadAll(rc); err == nil {
		t.Fatalf("read %d bytes of a cancelled request's body, no error", len(b))
	}
}

// A body that stalls with bytes of it buffered (the first ones; the start
// of a chunk's header) fails with a StallError after the stall time-out,
// through Open and through a pipeline: a read that may wait on the
// network is timed, whatever the buffer holds.
func TestLeanStallBuffered(t *testing.T) {
	for name, head := range map[string]string{
		"length":       "Content-Length: 100\r\n\r\nten bytes.",
		"chunk-header": "Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n1",
		"chunk-data":   "Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n5\r\nhel",
	} {
		t.Run(name, func(t *testing.T) {
			release := make(chan struct{})
			defer close(release)
			u := rawListen(t, func(c net.Conn) {
				c.Read(make([]byte, 4096))
				io.WriteString(c, "HTTP/1.1 200 OK\r\n"+head)
				select {
				case <-release:
				case <-time.After(5 * time.Second):
				}
			}) + "/s"
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			p := NewPipeline(leanClient(), 8) // stalls after 300 ms
			defer p.Close()
			p.Add(u)
			for how, open := range map[string]func() (io.ReadCloser, error){
				"Open":     func() (io.ReadCloser, error) { return Open(ctx, leanClient(), u, 1<<20) },
				"Pipeline": func() (io.ReadCloser, error) { return p.Next(ctx, u, 1<<20) },
			} {
				var se *StallError
				err := within(t, 2*time.Second, func() error { _, err := readAll(open()); return err })
				if !errors.As(err, &se) {
					t.Errorf("%s: %v, want a StallError", how, err)
				}
			}
		})
	}
}

// A response header without end fails once it is past the Transport's
// limit (net/http's 10 MB), through Open and through a pipeline, as the
// Transport's own would: before, lean read it into memory until the
// header time-out (a minute by default).
func TestLeanHeaderBounded(t *testing.T) {
	line := "X-Pad: " + strings.Repeat("a", 1000) + "\r\n"
	base := rawListen(t, func(c net.Conn) {
		c.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := http.ReadRequest(bufio.NewReader(c)); err != nil {
			return
		}
		io.WriteString(c, "HTTP/1.1 200 OK\r\n")
		for sent := 0; sent < 12<<20; sent += len(line) { // past 10 MB, bounded
			if _, err := io.WriteString(c, line); err != nil {
				return
			}
		}
		io.Copy(io.Discard, c) // hold the connection until the client ends it
	})
	c := New(Options{DisableCompression: true, ReadBufferSize: 64 << 10}) // the header time-out a minute
	for _, how := range []string{"open", "pipeline"} {
		ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
		var err error
		if how == "open" {
			_, err = Open(ctx, c, base+"/x", 1<<20)
		} else {
			p := NewPipeline(c, 8)
			p.Add(base + "/x")
			_, err = p.Next(ctx, base+"/x", 1<<20)
			p.Close()
		}
		cancel()
		if err == nil || !strings.Contains(err.Error(), "the response header is over 10485760 bytes") || !strings.Contains(err.Error(), base+"/x") {
			t.Errorf("%s: %v, want the header refused, naming the URL", how, err)
		}
	}
}
