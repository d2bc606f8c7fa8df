package serve_test

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/rsdump/rsdump/internal/httpc"
	"github.com/rsdump/rsdump/serve"
)

// rsdump serve announces h2c on its HTTP/1.1 answers (Alt-Svc naming the
// port asked), and rsdump's client speaks it from the next request on:
// byte for byte the same resources, HEAD and ranges included, and over
// Coalesce's connections answered at once, not held (an hour's hold
// time would fail the test's deadline).
func TestServeH2C(t *testing.T) {
	defer serve.SetHoldTime(time.Hour)()
	tr := smallTree(t, 20, 3000)
	addr, _ := serveCounted(t, tr.h, true)
	c := httpc.New(httpc.Options{})
	defer c.CloseIdleConnections()
	for i, name := range tr.names {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/res/"+name, nil)
		if i%3 == 2 {
			req.Header.Set("Range", "bytes=100-199")
		}
		resp, err := c.Do(req)
		if err != nil {
			cancel()
			t.Fatalf("GET %d: %v", i, err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		cancel()
		want := tr.data[name]
		if i%3 == 2 {
			want = want[100:200]
		}
		if err != nil || !bytes.Equal(b, want) {
			t.Fatalf("GET %d: %d bytes, %v", i, len(b), err)
		}
		wantProto := map[bool]int{true: 1, false: 2}[i == 0]
		if resp.ProtoMajor != wantProto {
			t.Errorf("GET %d: %s, want HTTP/%d", i, resp.Proto, wantProto)
		}
		if alt := resp.Header.Get("Alt-Svc"); i == 0 && alt != `h2c=":`+addr[len("127.0.0.1:"):]+`"` {
			t.Errorf("the HTTP/1.1 answer's Alt-Svc is %q", alt)
		}
	}
}

// Behind a TCP relay (a published container port, a tunnel, the
// benchmarks' wan), h2c is announced at the port the client asked, and
// the client's next requests go through the relay as HTTP/2 streams.
func TestServeH2CBehindRelay(t *testing.T) {
	t.Parallel()
	tr := smallTree(t, 4, 300)
	addr, _ := serveCounted(t, tr.h, false)
	relay := tcpRelay(t, addr)
	c := httpc.New(httpc.Options{})
	defer c.CloseIdleConnections()
	for i, name := range tr.names {
		resp, err := c.Get("http://" + relay + "/res/" + name)
		if err != nil {
			t.Fatalf("GET %d: %v", i, err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || !bytes.Equal(b, tr.data[name]) {
			t.Fatalf("GET %d: %d bytes, %v", i, len(b), err)
		}
		if alt := resp.Header.Get("Alt-Svc"); i == 0 && alt != `h2c=":`+relay[len("127.0.0.1:"):]+`"` {
			t.Errorf("through the relay, Alt-Svc is %q", alt)
		}
		if want := map[bool]int{true: 1, false: 2}[i == 0]; resp.ProtoMajor != want {
			t.Errorf("GET %d: %s, want HTTP/%d", i, resp.Proto, want)
		}
	}
}

// tcpRelay listens on a loopback port of its own and copies each
// connection's bytes to and from to.
func tcpRelay(t *testing.T, to string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			out, err := net.Dial("tcp", to)
			if err != nil {
				in.Close()
				continue
			}
			go func() { io.Copy(out, in); out.Close() }()
			go func() { io.Copy(in, out); in.Close() }()
		}
	}()
	return ln.Addr().String()
}
