package httpc

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// rawServer is an HTTP/1.1 server of the test's own on loopback, which
// sees what net/http's hides: whether a request came in behind another
// (already buffered when the one before it was read). It answers a GET of
// /PATH with the body "body of /PATH", and after closeAfter responses on
// a connection (0: never) closes it, saying so in the last response's
// header when tell; /redirect/PATH redirects to /PATH, /missing is 404.
type rawServer struct {
	base       string // http://127.0.0.1:PORT
	closeAfter int
	tell       bool
	// dropBehind loses the requests that came in behind the one it
	// answers (never answered, the connection kept open), as a server
	// that mishandles pipelining might.
	dropBehind bool

	mu      sync.Mutex
	conns   int
	paths   []string // every request, in the order read
	behind  int      // requests already buffered when read
	maxSeen int      // most requests buffered at once
	lost    int      // requests buffered on a connection it closed
}

func newRawServer(t *testing.T, closeAfter int, tell bool) *rawServer {
	t.Helper()
	s := &rawServer{closeAfter: closeAfter, tell: tell}
	s.base = rawListen(t, func(c net.Conn) {
		s.mu.Lock()
		s.conns++
		s.mu.Unlock()
		s.serve(c)
	})
	return s
}

// rawListen serves each connection to 127.0.0.1 with serve, on a
// goroutine of its own, closing it after, until the test ends; it
// returns the server's http:// URL.
func rawListen(tb testing.TB, serve func(c net.Conn)) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				serve(c)
			}()
		}
	}()
	return "http://" + ln.Addr().String()
}

func (s *rawServer) url(p string) string { return s.base + p }

func (s *rawServer) serve(c net.Conn) {
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(c)
	for n := 1; ; n++ {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		s.mu.Lock()
		s.paths = append(s.paths, req.URL.Path)
		if br.Buffered() > 0 {
			s.behind++
		}
		s.maxSeen = max(s.maxSeen, strings.Count(peek(br), "GET "))
		s.mu.Unlock()
		last := s.closeAfter > 0 && n == s.closeAfter
		status, hdr, body := "200 OK", "", "body of "+req.URL.Path
		switch {
		case strings.HasPrefix(req.URL.Path, "/redirect/"):
			status, hdr, body = "302 Found", "Location: "+strings.TrimPrefix(req.URL.Path, "/redirect")+"\r\n", ""
		case req.URL.Path == "/missing":
			status, body = "404 Not Found", "no"
		}
		if last && s.tell {
			hdr += "Connection: close\r\n"
		}
		fmt.Fprintf(c, "HTTP/1.1 %s\r\n%sContent-Length: %d\r\n\r\n%s", status, hdr, len(body), body)
		if s.dropBehind {
			br.Discard(br.Buffered())
		}
		if last {
			s.mu.Lock()
			s.lost += strings.Count(peek(br), "GET ")
			s.mu.Unlock()
			return
		}
	}
}

// peek is what is buffered behind the request just read.
func peek(br *bufio.Reader) string {
	b, _ := br.Peek(br.Buffered())
	return string(b)
}

func (s *rawServer) seen() (conns int, paths []string, behind int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.conns, append([]string(nil), s.paths...), s.behind
}

// fetchAll announces every path, then asks for each in turn, reading its
// body whole, and returns the bodies (or errors) in order.
func fetchAll(t *testing.T, p *Pipeline, s *rawServer, paths []string) []string {
	t.Helper()
	for _, q := range paths {
		p.Add(s.url(q))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var out []string
	for _, q := range paths {
		b, err := readAll(p.Next(ctx, s.url(q), 1<<20))
		if err != nil {
			b = "error: " + err.Error()
		}
		out = append(out, b)
	}
	return out
}

func paths(n int) []string {
	var ps []string
	for i := range n {
		ps = append(ps, fmt.Sprintf("/r%d", i))
	}
	return ps
}

func checkBodies(t *testing.T, ps, got []string) {
	t.Helper()
	for i, q := range ps {
		if got[i] != "body of "+q {
			t.Errorf("%s: got %q", q, got[i])
		}
	}
}

// Announced requests go out several at once on one connection, and each
// body is its own request's.
func TestPipelineWritesAhead(t *testing.T) {
	s := newRawServer(t, 0, false)
	p := NewPipeline(leanClient(), 8)
	defer p.Close()
	ps := paths(40)
	checkBodies(t, ps, fetchAll(t, p, s, ps))
	conns, seen, behind := s.seen()
	if conns != 1 || len(seen) != len(ps) {
		t.Errorf("%d connections, %d requests; want 1 and %d", conns, len(seen), len(ps))
	}
	// Eight a write: seven of every eight come in behind another.
	if behind < len(ps)*7/8 || s.maxSeen < 7 {
		t.Errorf("%d of %d requests came behind another, at most %d at once: not pipelined", behind, len(ps), s.maxSeen)
	}
}

// Depth 1 sends each request on its own, as Open does.
func TestPipelineDepthOne(t *testing.T) {
	s := newRawServer(t, 0, false)
	p := NewPipeline(leanClient(), 1)
	defer p.Close()
	ps := paths(10)
	checkBodies(t, ps, fetchAll(t, p, s, ps))
	if _, seen, behind := s.seen(); behind != 0 || len(seen) != len(ps) {
		t.Errorf("%d requests, %d came behind another", len(seen), behind)
	}
}

// A server that ends its connections after a few responses, saying so or
// not, loses the requests written behind: they are sent again, and every
// body is still its own request's. A server that keeps no connection
// alive at all stops the pipelining.
func TestPipelineServerCloses(t *testing.T) {
	for _, tc := range []struct {
		after int
		tell  bool
	}{{3, true}, {3, false}, {5, false}, {1, true}} {
		t.Run(fmt.Sprintf("after%d-tell%v", tc.after, tc.tell), func(t *testing.T) {
			s := newRawServer(t, tc.after, tc.tell)
			p := NewPipeline(leanClient(), 8)
			defer p.Close()
			ps := paths(30)
			checkBodies(t, ps, fetchAll(t, p, s, ps))
			s.mu.Lock()
			lost := s.lost
			s.mu.Unlock()
			if tc.after == 1 && lost > 7 {
				t.Errorf("%d requests lost for %d resources: pipelining went on on a server that closes every connection", lost, len(ps))
			}
			if tc.after > 1 && lost == 0 {
				t.Errorf("no request lost on connections closed after %d: not pipelined", tc.after)
			}
		})
	}
}

// A redirect is followed and a 404 is Open's StatusError; a URL asked out
// of order, or never announced, is still fetched, and its neighbours too.
func TestPipelineMixed(t *testing.T) {
	s := newRawServer(t, 0, false)
	p := NewPipeline(leanClient(), 8)
	defer p.Close()
	for _, q := range []string{"/a", "/redirect/b", "/missing", "/c", "/d", "/e"} {
		p.Add(s.url(q))
	}
	ctx := context.Background()
	want := []struct{ path, body string }{
		{"/a", "body of /a"},
		{"/redirect/b", "body of /b"},
		{"/missing", "404"},
		{"/d", "body of /d"}, // /c skipped
		{"/x", "body of /x"}, // never announced
		{"/c", "body of /c"}, // dropped: not announced any more
		{"/e", "body of /e"},
	}
	for _, w := range want {
		b, err := readAll(p.Next(ctx, s.url(w.path), 1<<20))
		var se *StatusError
		if errors.As(err, &se) {
			b = fmt.Sprint(se.Code)
		} else if err != nil {
			t.Fatalf("%s: %v", w.path, err)
		}
		if b != w.body {
			t.Errorf("%s: got %q, want %q", w.path, b, w.body)
		}
	}
}

// A body closed before its end loses the connection; the next request is
// answered whole all the same. A body longer than the cap fails as
// Open's does.
func TestPipelineBodyClosedEarly(t *testing.T) {
	s := newRawServer(t, 0, false)
	p := NewPipeline(leanClient(), 8)
	defer p.Close()
	ps := paths(6)
	for _, q := range ps {
		p.Add(s.url(q))
	}
	ctx := context.Background()
	rc, err := p.Next(ctx, s.url(ps[0]), 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 3)
	if _, err := rc.Read(buf); err != nil {
		t.Fatal(err)
	}
	rc.Close()
	if _, err := readAll(p.Next(ctx, s.url(ps[1]), 4)); !errors.Is(err, ErrTooLarge) {
		t.Errorf("a body past the cap: %v, want ErrTooLarge", err)
	}
	for _, q := range ps[2:] {
		if b, err := readAll(p.Next(ctx, s.url(q), 1<<20)); err != nil || b != "body of "+q {
			t.Errorf("%s: %q, %v", q, b, err)
		}
	}
}

// A client that cannot go lean (compression negotiated) fetches every
// URL through Open.
func TestPipelineNotLean(t *testing.T) {
	s := newRawServer(t, 0, false)
	p := NewPipeline(New(Options{ConnectTimeout: time.Second}), 8)
	defer p.Close()
	ps := paths(8)
	checkBodies(t, ps, fetchAll(t, p, s, ps))
	if _, _, behind := s.seen(); behind != 0 {
		t.Errorf("%d requests came behind another on a client that is not lean", behind)
	}
}

// A server that loses the requests written behind another costs one
// header time-out, after which the pipeline sends one request at a time:
// every body comes, not after a time-out for every request written
// behind another.
func TestPipelineUnansweredBehind(t *testing.T) {
	s := newRawServer(t, 0, false)
	s.dropBehind = true
	p := NewPipeline(leanClient(), 8)
	defer p.Close()
	ps := paths(24)
	checkBodies(t, ps, fetchAll(t, p, s, ps))
	conns, _, _ := s.seen()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.maxSeen < 1 {
		t.Errorf("nothing was pipelined at first (at most %d requests behind another)", s.maxSeen)
	}
	// One connection lost to the time-out, one for Open's GET of the
	// request it lost, one for the rest; a time-out a run of 8 makes 7.
	if conns > 3 {
		t.Errorf("%d connections for %d resources: pipelining went on after a request written behind another went unanswered", conns, len(ps))
	}
}
