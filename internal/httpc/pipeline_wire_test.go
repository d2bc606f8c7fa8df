package httpc

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"slices"
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
