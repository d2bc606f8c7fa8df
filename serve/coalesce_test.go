package serve_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rsdump/rsdump/layout"
	"github.com/rsdump/rsdump/serve"
)

// counting is a listener whose connections count the writes they are
// given (each at least one write(2)), the files handed to them
// (ReadFrom: sendfile), and their closing.
type counting struct {
	net.Listener
	writes, readFroms, closes atomic.Int64
}

func (l *counting) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &countingConn{TCPConn: c.(*net.TCPConn), l: l}, nil
}

type countingConn struct {
	*net.TCPConn
	l *counting
}

func (c *countingConn) Write(p []byte) (int, error) {
	c.l.writes.Add(1)
	return c.TCPConn.Write(p)
}

func (c *countingConn) ReadFrom(r io.Reader) (int64, error) {
	c.l.readFroms.Add(1)
	return c.TCPConn.ReadFrom(r)
}

func (c *countingConn) Close() error {
	c.l.closes.Add(1)
	return c.TCPConn.Close()
}

// serveCounted serves h with NewServer on loopback, on Coalesce's
// listener when coalesce is set, over a counting one.
func serveCounted(tb testing.TB, h http.Handler, coalesce bool) (string, *counting) {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	cl := &counting{Listener: ln}
	var on net.Listener = cl
	if coalesce {
		on = serve.Coalesce(cl)
	}
	srv := serve.NewServer(h, serve.Timeouts{})
	go srv.Serve(on)
	tb.Cleanup(func() { srv.Close() })
	return ln.Addr().String(), cl
}

// smallTree is n files of size random bytes, 128 a directory as the
// benchmarks' trees are, served as resources under /res/ of a directory
// with a Capability List.
func smallTree(tb testing.TB, n, size int) *tree {
	tb.Helper()
	src, dir := tb.TempDir(), tb.TempDir()
	if err := os.WriteFile(filepath.Join(dir, layout.CapabilityListName), []byte("<urlset/>"), 0o644); err != nil {
		tb.Fatal(err)
	}
	var names []string
	data := map[string][]byte{}
	for i := range n {
		name := fmt.Sprintf("d%04d/f%06d.bin", i/128, i)
		b := make([]byte, size)
		rand.Read(b)
		if err := os.MkdirAll(filepath.Join(src, filepath.Dir(name)), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(src, name), b, 0o644); err != nil {
			tb.Fatal(err)
		}
		names = append(names, name)
		data[name] = b
	}
	h, err := serve.New(dir, serve.Options{BaseURL: "/res/", Resources: src})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { h.(io.Closer).Close() })
	return &tree{h: h, src: src, dir: dir, names: names, data: data}
}

// tree is what smallTree serves: the handler, the directory, the files'
// names and contents.
type tree struct {
	h     http.Handler
	src   string
	dir   string // the pack output, with only a Capability List
	names []string
	data  map[string][]byte
}

// pipe is a raw client connection that sends requests in one write.
type pipe struct {
	c  net.Conn
	br *bufio.Reader
}

func dialPipe(tb testing.TB, addr string) *pipe {
	tb.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { c.Close() })
	return &pipe{c: c, br: bufio.NewReader(c)}
}

// request is a method, a path and header lines, each ending in CRLF.
type request struct{ method, path, header string }

// send writes the requests in one write.
func (p *pipe) send(tb testing.TB, reqs ...request) {
	tb.Helper()
	var b bytes.Buffer
	for _, r := range reqs {
		fmt.Fprintf(&b, "%s %s HTTP/1.1\r\nHost: x\r\n%s\r\n", r.method, r.path, r.header)
	}
	if _, err := p.c.Write(b.Bytes()); err != nil {
		tb.Fatal(err)
	}
}

// receive reads the response to r within d.
func (p *pipe) receive(tb testing.TB, r request, d time.Duration) (*http.Response, []byte) {
	tb.Helper()
	p.c.SetReadDeadline(time.Now().Add(d))
	resp, err := http.ReadResponse(p.br, &http.Request{Method: r.method})
	if err != nil {
		tb.Fatalf("%s %s: %v", r.method, r.path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		tb.Fatalf("%s %s: %v", r.method, r.path, err)
	}
	return resp, b
}

func gets(names []string) []request {
	var reqs []request
	for _, n := range names {
		reqs = append(reqs, request{method: http.MethodGet, path: "/res/" + n})
	}
	return reqs
}

// The answers to 8 pipelined requests for small files leave in one or
// two writes, not one each as without Coalesce; they are the files, with
// the Capability List's link. The timer is set far off, so that only
// the coalescing is measured (and it cannot be what sends them).
func TestCoalescesPipelinedResponses(t *testing.T) {
	defer serve.SetHoldTime(time.Hour)()
	tr := smallTree(t, 8, 2048)
	h, names, data := tr.h, tr.names, tr.data
	reqs := gets(names)
	for _, co := range []bool{false, true} {
		addr, cl := serveCounted(t, h, co)
		p := dialPipe(t, addr)
		minWrites := int64(1 << 30)
		for range 5 {
			before := cl.writes.Load()
			p.send(t, reqs...)
			for i, r := range reqs {
				resp, b := p.receive(t, r, 10*time.Second)
				if resp.StatusCode != http.StatusOK || !bytes.Equal(b, data[names[i]]) {
					t.Fatalf("coalesce %v: %s: status %d, %d bytes", co, r.path, resp.StatusCode, len(b))
				}
				if !strings.Contains(resp.Header.Get("Link"), layout.CapabilityListName) {
					t.Fatalf("coalesce %v: %s: Link %q", co, r.path, resp.Header.Get("Link"))
				}
			}
			minWrites = min(minWrites, cl.writes.Load()-before)
		}
		switch {
		case !co && minWrites != int64(len(reqs)):
			t.Errorf("without Coalesce: %d responses left in %d writes, not one each", len(reqs), minWrites)
		case co && minWrites > 2:
			t.Errorf("with Coalesce: %d responses left in %d writes, want at most 2", len(reqs), minWrites)
		}
	}
}

// A pipelined request's answer is not held up by a slow one behind it:
// the timer sends it, while the slow handler still waits.
func TestCoalesceSlowBehindFast(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	defer close(release)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			<-release
		}
		io.WriteString(w, r.URL.Path)
	})
	addr, _ := serveCounted(t, h, true)
	p := dialPipe(t, addr)
	fast, slow := request{method: "GET", path: "/fast"}, request{method: "GET", path: "/slow"}
	p.send(t, fast, slow)
	if _, b := p.receive(t, fast, 5*time.Second); string(b) != "/fast" {
		t.Fatalf("got %q", b)
	}
	release <- struct{}{}
	if _, b := p.receive(t, slow, 5*time.Second); string(b) != "/slow" {
		t.Fatalf("got %q", b)
	}
}

// Requests one at a time on a kept-alive connection are answered at
// once: what is held goes out when the server waits for the next
// request, not on the timer, set here far off.
func TestCoalesceOneAtATime(t *testing.T) {
	defer serve.SetHoldTime(time.Hour)()
	tr := smallTree(t, 3, 5000)
	h, names, data := tr.h, tr.names, tr.data
	addr, cl := serveCounted(t, h, true)
	c := &http.Client{Transport: &http.Transport{MaxConnsPerHost: 1}}
	defer c.CloseIdleConnections()
	for i := range 10 {
		name := names[i%len(names)]
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/res/"+name, nil)
		resp, err := c.Do(req)
		if err != nil {
			cancel()
			t.Fatalf("request %d: %v", i, err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		cancel()
		if err != nil || !bytes.Equal(b, data[name]) {
			t.Fatalf("request %d: %d bytes, %v", i, len(b), err)
		}
	}
	if n := cl.closes.Load(); n != 0 {
		t.Errorf("%d connections closed, want one kept alive", n)
	}
}

// Mixed pipelined requests (HEAD, a range, a 404, a large file that
// goes out with sendfile between small ones) are answered as without
// Coalesce, byte for byte.
func TestCoalesceMixedPipeline(t *testing.T) {
	defer serve.SetHoldTime(time.Hour)()
	tr := smallTree(t, 3, 3000)
	h, names, data := tr.h, tr.names, tr.data
	big := make([]byte, 3<<20)
	rand.Read(big)
	if err := os.WriteFile(filepath.Join(tr.src, "big.bin"), big, 0o644); err != nil {
		t.Fatal(err)
	}
	reqs := []request{
		{method: "GET", path: "/res/" + names[0]},
		{method: "HEAD", path: "/res/" + names[1]},
		{method: "GET", path: "/res/" + names[1], header: "Range: bytes=10-19\r\n"},
		{method: "GET", path: "/res/nothing"},
		{method: "GET", path: "/res/big.bin"},
		{method: "GET", path: "/res/" + names[2]},
		{method: "GET", path: "/res/big.bin", header: "Range: bytes=1000000-\r\n"},
		{method: "GET", path: "/res/" + names[0]},
	}
	addr, cl := serveCounted(t, h, true)
	p := dialPipe(t, addr)
	p.send(t, reqs...)
	want := []struct {
		status int
		body   []byte
	}{
		{200, data[names[0]]}, {200, nil}, {206, data[names[1]][10:20]}, {404, nil},
		{200, big}, {200, data[names[2]]}, {206, big[1000000:]}, {200, data[names[0]]},
	}
	for i, r := range reqs {
		resp, b := p.receive(t, r, 10*time.Second)
		if resp.StatusCode != want[i].status || want[i].status != 404 && !bytes.Equal(b, want[i].body) {
			t.Errorf("%s %s %s: status %d, %d bytes; want %d, %d bytes", r.method, r.path, r.header, resp.StatusCode, len(b), want[i].status, len(want[i].body))
		}
		if r.method == "HEAD" && resp.ContentLength != int64(len(data[names[1]])) {
			t.Errorf("HEAD: Content-Length %d", resp.ContentLength)
		}
	}
	if n := cl.readFroms.Load(); n < 2 {
		t.Errorf("the large file was handed to the connection %d times, want sendfile for both", n)
	}
}

// A client that goes away in the middle of a pipeline leaves no
// connection behind, though the timer is far off: what is held goes out
// (and fails) when the server reads again, and the connection is closed.
func TestCoalesceClientGoesAway(t *testing.T) {
	defer serve.SetHoldTime(time.Hour)()
	tr := smallTree(t, 8, 2048)
	h, names := tr.h, tr.names
	addr, cl := serveCounted(t, h, true)
	p := dialPipe(t, addr)
	reqs := gets(names)
	p.send(t, reqs...)
	p.receive(t, reqs[0], 5*time.Second)
	p.c.Close()
	deadline := time.Now().Add(5 * time.Second)
	for cl.closes.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the server did not close the connection of a client that went away")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// BenchmarkPipelinedSmall is a client that sends 8 GETs of 2 KB files in
// one write and reads the 8 answers, on loopback, without and with
// Coalesce; an op is one request. writes/resp counts the writes the
// server's connection is given per response, cpu-ns/op the CPU time of
// the process (server and client) per request, which a busy machine
// changes less than the time per request.
func BenchmarkPipelinedSmall(b *testing.B) {
	tr := smallTree(b, 1024, 2048)
	h, names := tr.h, tr.names
	for _, co := range []bool{false, true} {
		b.Run(fmt.Sprintf("coalesce=%v", co), func(b *testing.B) {
			addr, cl := serveCounted(b, h, co)
			p := dialPipe(b, addr)
			var batch bytes.Buffer
			b.ReportAllocs()
			b.ResetTimer()
			before, cpu := cl.writes.Load(), cpuTime()
			for i := 0; i < b.N; i += 8 {
				batch.Reset()
				k := min(8, b.N-i)
				for j := range k {
					fmt.Fprintf(&batch, "GET /res/%s HTTP/1.1\r\nHost: x\r\n\r\n", names[(i+j)%len(names)])
				}
				if _, err := p.c.Write(batch.Bytes()); err != nil {
					b.Fatal(err)
				}
				for range k {
					resp, err := http.ReadResponse(p.br, nil)
					if err != nil {
						b.Fatal(err)
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			}
			b.ReportMetric(float64(cl.writes.Load()-before)/float64(b.N), "writes/resp")
			b.ReportMetric(float64(cpuTime()-cpu)/float64(b.N), "cpu-ns/op")
		})
	}
}

// oneConn is a listener that hands out one connection.
type oneConn struct {
	net.Listener
	c net.Conn
}

func (l oneConn) Accept() (net.Conn, error) { return l.c, nil }

// What a connection holds goes out under the write deadline it was
// written under, not the none net/http sets between requests: held
// bytes that a client does not take fail when that deadline passes, as
// they would have without Coalesce, and the read that sent them fails
// too, which ends net/http's connection.
func TestCoalesceKeepsWriteDeadline(t *testing.T) {
	defer serve.SetHoldTime(time.Hour)()
	server, client := net.Pipe() // a write waits for the other end's read
	defer client.Close()
	c, err := serve.Coalesce(oneConn{c: server}).Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
	if _, err := c.Write([]byte("HTTP/1.1 200 OK\r\n\r\n")); err != nil {
		t.Fatalf("a held write: %v", err)
	}
	c.SetWriteDeadline(time.Time{})
	done := make(chan error, 1)
	go func() {
		_, err := c.Read(make([]byte, 4096))
		done <- err
	}()
	select {
	case err := <-done:
		var ne net.Error
		if !errors.As(err, &ne) || !ne.Timeout() {
			t.Errorf("the read after the held write: %v, want its write's timeout", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("held bytes nobody takes were still being written 5 s after their deadline")
	}
}
