package httpc

import (
	"bufio"
	"context"
	"crypto/x509"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// h2cServer serves "PROTO" (the request's protocol) over HTTP/1.1 and
// h2c, sending the Alt-Svc field altSvc(port) when not "".
func h2cServer(t *testing.T, h2c bool, altSvc func(port string) string) string {
	t.Helper()
	srv := httptest.NewUnstartedServer(nil)
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if altSvc != nil {
			w.Header().Set("Alt-Svc", altSvc(port))
		}
		fmt.Fprint(w, r.Proto)
	})
	var p http.Protocols
	p.SetHTTP1(true)
	p.SetUnencryptedHTTP2(h2c)
	srv.Config.Protocols = &p
	srv.Start()
	t.Cleanup(srv.Close)
	return srv.URL
}

func protos(t *testing.T, c *http.Client, url string, n int) string {
	t.Helper()
	var got []string
	for range n {
		body, err := readAll(Open(context.Background(), c, url, 0))
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, body)
	}
	return strings.Join(got, " ")
}

// A server that says it speaks h2c at the port asked is spoken to over
// h2c from the next request on; one that names another port, or none, is
// not; H2CAlways speaks it from the first request, H2CNever never.
func TestH2CLearned(t *testing.T) {
	t.Parallel()
	same := func(port string) string { return `h2c=":` + port + `"; ma=86400` }
	other := func(port string) string { return `h2=":443", h2c=":1"` }
	for _, c := range []struct {
		name   string
		mode   H2CMode
		h2c    bool
		altSvc func(string) string
		want   string
	}{
		{"auto", H2CAuto, true, same, "HTTP/1.1 HTTP/2.0 HTTP/2.0"},
		{"auto-host", H2CAuto, true, func(port string) string { return `h2c="127.0.0.1:` + port + `"` }, "HTTP/1.1 HTTP/2.0 HTTP/2.0"},
		{"auto-other-port", H2CAuto, true, other, "HTTP/1.1 HTTP/1.1 HTTP/1.1"},
		{"auto-other-host", H2CAuto, true, func(port string) string { return `h2c="127.0.0.2:` + port + `"` }, "HTTP/1.1 HTTP/1.1 HTTP/1.1"},
		{"auto-none", H2CAuto, true, nil, "HTTP/1.1 HTTP/1.1 HTTP/1.1"},
		{"never", H2CNever, true, same, "HTTP/1.1 HTTP/1.1 HTTP/1.1"},
		{"always", H2CAlways, true, nil, "HTTP/2.0 HTTP/2.0 HTTP/2.0"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			url := h2cServer(t, c.h2c, c.altSvc)
			if got := protos(t, New(Options{H2C: c.mode}), url, 3); got != c.want {
				t.Errorf("protocols %s, want %s", got, c.want)
			}
		})
	}
}

// A server that says it speaks h2c and does not (a proxy that passed on
// another's field) costs one failed attempt: the request goes again over
// HTTP/1.1 and the host is not spoken to over h2c again.
func TestH2CFallsBack(t *testing.T) {
	t.Parallel()
	url := h2cServer(t, false, func(port string) string { return `h2c=":` + port + `"` })
	c := New(Options{})
	if got := protos(t, c, url, 4); got != "HTTP/1.1 HTTP/1.1 HTTP/1.1 HTTP/1.1" {
		t.Errorf("protocols %s", got)
	}
	tr := c.Transport.(*transport)
	if key := strings.TrimPrefix(url, "http://"); tr.h2c.knows(key) || !tr.h2c.failed[key] {
		t.Errorf("after a failed h2c attempt: known %v, failed %v", tr.h2c.knows(key), tr.h2c.failed[key])
	}
	// H2CAlways means it: the server's HTTP/1.1 is an error.
	if _, err := Open(context.Background(), New(Options{H2C: H2CAlways}), url, 0); err == nil {
		t.Error("H2CAlways on a server without h2c: no error")
	}
}

func TestAltSvcH2C(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		values       []string
		offer, clear bool
	}{
		{[]string{`h2c=":8080"`}, true, false},
		{[]string{` h3=":443"; ma=3600 , h2c = "example.org:8080" ; persist=1`}, true, false},
		{[]string{`h2c="EXAMPLE.org:8080"`}, true, false},
		{[]string{`h2c="other.org:8080"`}, false, false},
		{[]string{`h2c=":80"`}, false, false},
		{[]string{`h2=":8080"`}, false, false},
		{[]string{`h2c`, `h2c=`, `=":8080"`, `h2c=":"`}, false, false},
		{[]string{`h2c=":8080"`, "clear"}, false, true},
	} {
		offer, clear := altSvcH2C(c.values, "example.org", "8080")
		if offer != c.offer || clear != c.clear {
			t.Errorf("%q: offer %v clear %v, want %v %v", c.values, offer, clear, c.offer, c.clear)
		}
	}
}

// Over TLS the client offers HTTP/2 and HTTP/1.1, and takes the server's
// choice; RootCAs is what the certificate is checked against.
func TestHTTP2OverTLS(t *testing.T) {
	t.Parallel()
	for _, h2 := range []bool{true, false} {
		srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, r.Proto) }))
		srv.EnableHTTP2 = h2
		srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the handshake refused below
		srv.StartTLS()
		t.Cleanup(srv.Close)
		pool := x509.NewCertPool()
		pool.AddCert(srv.Certificate())
		want := map[bool]string{true: "HTTP/2.0 HTTP/2.0", false: "HTTP/1.1 HTTP/1.1"}[h2]
		if got := protos(t, New(Options{RootCAs: pool}), srv.URL, 2); got != want {
			t.Errorf("server with HTTP/2 %v: protocols %s, want %s", h2, got, want)
		}
		if _, err := Open(context.Background(), New(Options{}), srv.URL, 0); err == nil || !strings.Contains(err.Error(), "certificate") {
			t.Errorf("without its CA: %v, want a certificate error", err)
		}
	}
}

// HTTP1 speaks HTTP/1.1 to a server that offers h2c (rsdump serve's
// Alt-Svc) and to one that offers HTTP/2 over TLS, whatever H2C says.
func TestHTTP1Only(t *testing.T) {
	t.Parallel()
	url := h2cServer(t, true, func(port string) string { return `h2c=":` + port + `"` })
	for _, mode := range []H2CMode{H2CAuto, H2CAlways} {
		if got := protos(t, New(Options{H2C: mode, HTTP1: true}), url, 3); got != "HTTP/1.1 HTTP/1.1 HTTP/1.1" {
			t.Errorf("h2c server, mode %d: protocols %s", mode, got)
		}
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, r.Proto) }))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(srv.Close)
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	if got := protos(t, New(Options{RootCAs: pool, HTTP1: true}), srv.URL, 2); got != "HTTP/1.1 HTTP/1.1" {
		t.Errorf("TLS server with HTTP/2: protocols %s", got)
	}
}

// closingServer answers GET /N with "N", keeping connections alive; a
// connection left idle for idle is closed, after a 408 written when
// with408. The first answer of every second connection is a 408 already
// (a 408 that crossed the request on the wire).
func closingServer(t *testing.T, idle time.Duration, with408 bool) (string, *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	var conns, served atomic.Int64
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			crossed := conns.Add(1)%2 == 0
			go func() {
				defer c.Close()
				br := bufio.NewReader(c)
				for first := true; ; first = false {
					c.SetReadDeadline(time.Now().Add(idle))
					req, err := http.ReadRequest(br)
					if err != nil || crossed && first {
						if with408 || crossed {
							fmt.Fprint(c, "HTTP/1.1 408 Request Timeout\r\nConnection: close\r\nContent-Length: 0\r\n\r\n")
						}
						return
					}
					served.Add(1)
					body := strings.TrimPrefix(req.URL.Path, "/")
					fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
				}
			}()
		}
	}()
	return "http://" + ln.Addr().String(), &served
}

// A GET answered 408, or whose kept-alive connection the server closed
// (with a 408 or without), is sent again on a new connection: every
// fetch gets its own answer.
func TestIdleCloseRetried(t *testing.T) {
	t.Parallel()
	for _, with408 := range []bool{true, false} {
		url, served := closingServer(t, 20*time.Millisecond, with408)
		c := New(Options{})
		for i := range 40 {
			body, err := readAll(Open(context.Background(), c, fmt.Sprintf("%s/%d", url, i), 0))
			if err != nil || body != fmt.Sprint(i) {
				t.Fatalf("408 %v: GET %d: %q, %v", with408, i, body, err)
			}
			if i%4 == 3 {
				time.Sleep(30 * time.Millisecond) // past the server's idle time
			}
		}
		if served.Load() != 40 {
			t.Errorf("408 %v: served %d, want 40", with408, served.Load())
		}
	}
}

// A server that answers every request 408 is answered 408 after the
// retries, as a *StatusError.
func TestAlways408(t *testing.T) {
	t.Parallel()
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.WriteHeader(http.StatusRequestTimeout)
	}))
	t.Cleanup(srv.Close)
	_, err := Open(context.Background(), New(Options{}), srv.URL, 0)
	if se, ok := err.(*StatusError); !ok || se.Code != http.StatusRequestTimeout {
		t.Fatalf("err = %v, want a 408 StatusError", err)
	}
	if hits.Load() != 1+retries408 {
		t.Errorf("%d requests, want %d", hits.Load(), 1+retries408)
	}
}
