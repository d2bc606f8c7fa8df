package serve_test

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rsdump/rsdump/serve"
)

// smallBuffers gives the connections it accepts a small send buffer, so
// that a response waits on the client's reading, not on the kernel's
// buffers.
type smallBuffers struct{ net.Listener }

func (l smallBuffers) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetWriteBuffer(16 << 10)
	}
	return c, err
}

// startServer serves the resources src (under /res/) with NewServer and
// the timeouts to; every request's log entry goes to the channel.
func startServer(t *testing.T, src string, to serve.Timeouts) (string, chan serve.Request) {
	t.Helper()
	logged := make(chan serve.Request, 16)
	h, err := serve.New(t.TempDir(), serve.Options{BaseURL: "/res/", Resources: src, Log: func(r serve.Request) { logged <- r }})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := serve.NewServer(h, to)
	go srv.Serve(serve.Coalesce(smallBuffers{ln}))
	t.Cleanup(func() {
		srv.Close()
		h.(io.Closer).Close()
	})
	return ln.Addr().String(), logged
}

// bigFile writes n random bytes to src/big.bin.
func bigFile(t *testing.T, src string, n int) []byte {
	t.Helper()
	data := make([]byte, n)
	rand.Read(data)
	if err := os.WriteFile(filepath.Join(src, "big.bin"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	return data
}

// closedWithin reports whether the server closes c within d.
func closedWithin(c net.Conn, d time.Duration) bool {
	c.SetReadDeadline(time.Now().Add(d))
	_, err := io.Copy(io.Discard, c)
	var ne net.Error
	return !(errors.As(err, &ne) && ne.Timeout())
}

// A client that sends nothing, one that dribbles its header a byte every
// 100 ms, and one that keeps an idle connection, are each let go once
// their timeout has passed.
func TestServerTimeouts(t *testing.T) {
	t.Parallel()
	// Timeouts of a second, and five of slack: under -race beside the
	// whole module (load 5 on 2 cores) a server goroutine came to a
	// request sent at once after 300 ms had passed (it answered 400),
	// and a dribbling client was still connected after 2.5 s.
	to := serve.Timeouts{ReadHeader: time.Second, Read: time.Second, Write: time.Second, Idle: 1500 * time.Millisecond}
	addr, _ := startServer(t, t.TempDir(), to)
	const slack = 5 * time.Second
	silent, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	if !closedWithin(silent, to.ReadHeader+slack) {
		t.Error("a connection that sent nothing is still open")
	}

	slow, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	start := time.Now()
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		for _, b := range []byte("GET /res/x HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa") {
			if _, err := slow.Write([]byte{b}); err != nil {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()
	if !closedWithin(slow, to.ReadHeader+slack) {
		t.Errorf("a client dribbling its header is still connected after %s", time.Since(start))
	}
	slow.Close()
	<-stopped

	idle, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	io.WriteString(idle, "GET /res/x HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(idle), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound || resp.Close {
		t.Fatalf("%s, close %v", resp.Status, resp.Close)
	}
	if !closedWithin(idle, to.Idle+slack) {
		t.Error("an idle connection is still open")
	}
}

// A download much longer than the write timeout (and the read timeout)
// goes through whole while the client keeps reading, slowly; one whose
// client stops reading is cut off.
//
// Not parallel: it holds the client to a pace, which a test beside it
// on the same cores may starve (it did under -race).
func TestSlowDownload(t *testing.T) {
	src := t.TempDir()
	data := bigFile(t, src, 8<<20)
	// A WriteChunk takes the client about 60 ms, a twentieth of Write: a
	// tenth was missed once more under the race detector's whole-module
	// load (a chunk took the starved client over 600 ms). At least 256
	// reads of 32 KiB with 15 ms sleeps take 3.84 s, over 3 times Write.
	to := serve.Timeouts{Read: 300 * time.Millisecond, Write: 1200 * time.Millisecond}
	addr, logged := startServer(t, src, to)

	c := dialSmall(t, addr)
	io.WriteString(c, "GET /res/big.bin HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
	start := time.Now()
	resp, err := http.ReadResponse(bufio.NewReaderSize(c, 4<<10), nil)
	if err != nil {
		t.Fatal(err)
	}
	var got bytes.Buffer
	buf := make([]byte, 32<<10)
	for {
		n, err := io.ReadFull(resp.Body, buf)
		got.Write(buf[:n])
		if err != nil {
			break
		}
		time.Sleep(15 * time.Millisecond)
	}
	if took := time.Since(start); !bytes.Equal(got.Bytes(), data) || took < 3*to.Write {
		t.Fatalf("a slow download: %d bytes of %d in %s", got.Len(), len(data), took)
	}
	if r := <-logged; r.Status != 200 || r.Bytes != int64(len(data)) {
		t.Errorf("logged %d, %d bytes", r.Status, r.Bytes)
	}

	stalled := dialSmall(t, addr)
	io.WriteString(stalled, "GET /res/big.bin HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
	io.ReadFull(stalled, buf) // then reads no more
	select {
	case r := <-logged:
		if r.Bytes >= int64(len(data)) {
			t.Errorf("a stalled download was sent whole: %d bytes", r.Bytes)
		}
	case <-time.After(to.Write + 3*time.Second):
		t.Error("a client that stopped reading still holds its response")
	}
}

// dialSmall connects with a small receive buffer.
func dialSmall(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	c.(*net.TCPConn).SetReadBuffer(16 << 10)
	t.Cleanup(func() { c.Close() })
	return c
}
