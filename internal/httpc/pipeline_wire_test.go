package httpc

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// wireURLs are URLs of every shape a list may name: queries, escapes,
// ports, IPv6, fragments, hosts Request.Write would rewrite or drop.
var wireURLs = []string{
	"http://127.0.0.1:8080/data/a.txt",
	"http://example.org/",
	"http://example.org",
	"http://example.org:80/a",
	"http://example.org:/a",
	"http://Example.ORG/A%20B/c%2Fd?x=1&y=%20#frag",
	"http://example.org/a b",
	"http://example.org/%E2%82%AC/€?q=€",
	"http://example.org/a?",
	"http://example.org/?#",
	"http://example.org//double//slash/",
	"http://example.org/a/../b/./c",
	"http://example.org/a;p=1?q",
	"http://[::1]:8080/v6",
	"http://[fe80::1%25eth0]:8080/zone",
	"http://bücher.example/x",
	"http://under_score.example/x",
	"http://example.org/%00",
	"http://example.org/a%0d%0aInjected:%20x",
	"http://example.org/~user/it's/(x)*!$,;=@:",
	"http:opaque",
	"http:///nohost",
}

// The pipeline's request is byte for byte what Request.Write writes for
// the GET it built before (http.NewRequest, its User-Agent set), or the
// URL is left to Open.
func TestPipelineRequestBytes(t *testing.T) {
	for _, ua := range []string{"rsdump/v1.2.3 (+https://github.com/rsdump/rsdump)", "", " ", " spaced\r\nline "} {
		var left []string
		for _, u := range wireURLs {
			if !checkWire(t, u, ua) {
				left = append(left, u)
			}
		}
		if want := []string{"http://[fe80::1%25eth0]:8080/zone", "http://bücher.example/x"}; !slices.Equal(left, want) {
			t.Errorf("left to Open: %q, want %q", left, want)
		}
	}
}

// checkWire compares getRequest's bytes for u with Request.Write's; ok
// is false for a URL the pipeline leaves to Open.
func checkWire(t *testing.T, u, ua string) (ok bool) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		return true // http.NewRequest's error: Add leaves it to Open's
	}
	got, ok := getRequest(req, userAgentLine(ua))
	req.Header.Set("User-Agent", ua)
	var want bytes.Buffer
	werr := req.Write(&want)
	if ok && (werr != nil || got != want.String()) {
		t.Errorf("%s, User-Agent %q:\n got %q\nwant %q (%v)", u, ua, got, want.String(), werr)
	}
	return ok
}

func FuzzPipelineRequestBytes(f *testing.F) {
	for _, u := range wireURLs {
		f.Add(u, "rsdump/v1")
	}
	f.Fuzz(func(t *testing.T, u, ua string) {
		checkWire(t, u, ua)
	})
}

// What a server reads from a pipeline is, byte for byte, the requests
// Request.Write writes for the GETs the pipeline built before (its
// User-Agent set), one after another, several in one write.
func TestPipelineWireSent(t *testing.T) {
	var mu sync.Mutex
	var got bytes.Buffer
	base := rawListen(t, func(c net.Conn) {
		c.SetDeadline(time.Now().Add(10 * time.Second))
		br := bufio.NewReader(io.TeeReader(c, lockedWriter{&mu, &got}))
		for {
			if _, err := http.ReadRequest(br); err != nil {
				return
			}
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
		}
	})
	c := leanClient()
	p := NewPipeline(c, 8)
	defer p.Close()
	var want bytes.Buffer
	var us []string
	for _, q := range []string{"/a", "/b%20c?d=e&f", "/€/x", "/a/../b//c;p", "/?"} {
		u := base + q
		us = append(us, u)
		p.Add(u)
		req, err := http.NewRequest(http.MethodGet, u, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("User-Agent", c.Transport.(*transport).ua)
		req.Write(&want)
	}
	for _, u := range us {
		if b, err := readAll(p.Next(t.Context(), u, 1<<20)); err != nil || b != "ok" {
			t.Fatalf("%s: %q, %v", u, b, err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if got.String() != want.String() {
		t.Errorf("the server read\n%q\nwant\n%q", got.String(), want.String())
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (w lockedWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.w.Write(b)
}

// errWouldWait is what a read past the buffered bytes gets.
var errWouldWait = errors.New("read past what was buffered")

type waitReader struct{}

func (waitReader) Read([]byte) (int, error) { return 0, errWouldWait }

// checkHeaderBuffered: when headerBuffered says a buffered prefix of
// resp holds the header whole, ReadResponse reads no further (no 1xx
// loop: lean checks again before each response).
func checkHeaderBuffered(t *testing.T, resp string) {
	for k := range len(resp) + 1 {
		br := bufio.NewReaderSize(io.MultiReader(strings.NewReader(resp[:k]), waitReader{}), 64<<10)
		br.Peek(k)
		if br.Buffered() != k || !headerBuffered(br) {
			continue
		}
		if _, err := http.ReadResponse(br, nil); errors.Is(err, errWouldWait) {
			t.Errorf("%q: headerBuffered, and ReadResponse read further", resp[:k])
		}
	}
}

var headerSeeds = []string{
	"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
	"HTTP/1.1 200 OK\nContent-Length: 2\n\nok",
	"HTTP/1.1 200 OK\r\nX: a\r\n b\r\n\tc\r\n\r\n",
	"HTTP/1.1 200 OK\r\nX: a\n\r\nY: b\r\n\r\n",
	"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\n\r\n",
	"HTTP/1.1 204 No Content\r\n\r\n",
	"\r\n\r\nHTTP/1.1 200 OK\r\n\r\n",
	"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n",
	"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n",
	"HTTP/1.1 200 OK\r\n X: leading\r\n\r\n",
	"HTTP/1.1 200 OK\r\nX: a\r\r\n\r\n",
}

func TestHeaderBuffered(t *testing.T) {
	for _, r := range headerSeeds {
		checkHeaderBuffered(t, r)
	}
	for r, want := range map[string]bool{
		"HTTP/1.1 200 OK\r\n\r\n": true, "HTTP/1.1 200 OK\n\n": true, "HTTP/1.1 200 OK\r\nX: a\r\n\r": false,
		"HTTP/1.1 200 OK\r\nX: a\r\n": false, "": false, "HTTP/1.1 200 OK\r\nX: a\r\n\r\nbody\n\n": true,
	} {
		br := bufio.NewReader(strings.NewReader(r))
		br.Peek(len(r))
		if got := headerBuffered(br); got != want {
			t.Errorf("%q: headerBuffered %v, want %v", r, got, want)
		}
	}
}

func FuzzHeaderBuffered(f *testing.F) {
	for _, r := range headerSeeds {
		f.Add(r)
	}
	f.Fuzz(checkHeaderBuffered)
}
