package serve

import (
	"bytes"
	"io"
	"net"
	"sync"
	"time"
)

// Coalesce returns a listener whose connections hold what is written to
// them for a moment, so that the responses to pipelined requests leave
// in one write, not one each: net/http writes every response out as its
// handler returns, and on small files that write is a large part of a
// request's cost. What is held goes out before the connection reads
// (net/http reads only once it has answered every request it holds),
// before a file is handed to it (sendfile keeps working), before it is
// closed or shut for writing, once 64 KiB are held (holdBytes), and at
// the latest a millisecond (holdTime) after the first of them was
// written, so that a slow request behind an answered one does not hold up
// its answer more than that. A
// client sees the same bytes; only the timing changes. A connection that
// opens with the HTTP/2 preface (h2c) is left alone: HTTP/2 reads all
// the time and batches its own writes, and held bytes would wait for the
// timer. Serve a
// NewServer's http.Server on it: http.Server.Serve(Coalesce(ln)). TLS,
// which serve does not do, would go on top: tls.NewListener(Coalesce(ln),
// config).
func Coalesce(ln net.Listener) net.Listener { return coalescingListener{ln} }

// holdTime and holdBytes bound what a Coalesce connection holds.
var holdTime = time.Millisecond

const holdBytes = 64 << 10

type coalescingListener struct{ net.Listener }

func (l coalescingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &coalescer{Conn: c}, nil
}

var holdBufs = sync.Pool{New: func() any { b := make([]byte, 0, holdBytes); return &b }}

// coalescer is a connection that holds what is written to it (see
// Coalesce). What it holds goes out under the earliest write deadline it
// was written under, as it would have without the holding: net/http sets
// a deadline before a response and clears it after, and a client that
// does not read must not keep the bytes, and the connection, forever.
type coalescer struct {
	net.Conn
	mu     sync.Mutex
	held   *[]byte   // nil when nothing is held, else from holdBufs
	heldDL time.Time // the deadline held goes out under
	wdl    time.Time // the write deadline last set
	timer  *time.Timer
	armed  bool
	err    error // of a write of held: the connection is broken
	read   bool  // the connection has read its first bytes
	h2     bool  // they were the HTTP/2 preface: nothing is held
}

// h2Preface is how an HTTP/2 connection with prior knowledge opens.
var h2Preface = []byte("PRI * HTTP/2.0")

func (c *coalescer) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.h2 {
		return c.Conn.Write(p)
	}
	if c.held != nil && len(*c.held)+len(p) > holdBytes {
		if err := c.flushLocked(); err != nil {
			return 0, err
		}
	}
	if c.err != nil {
		return 0, c.err
	}
	if len(p) >= holdBytes {
		return c.Conn.Write(p)
	}
	if c.held == nil {
		c.held = holdBufs.Get().(*[]byte)
		c.heldDL = c.wdl
	} else if !c.wdl.IsZero() && (c.heldDL.IsZero() || c.wdl.Before(c.heldDL)) {
		c.heldDL = c.wdl
	}
	*c.held = append(*c.held, p...)
	if !c.armed {
		c.armed = true
		if c.timer == nil {
			c.timer = time.AfterFunc(holdTime, c.expire)
		} else {
			c.timer.Reset(holdTime)
		}
	}
	return len(p), nil
}

// flushLocked writes out what is held.
func (c *coalescer) flushLocked() error {
	if c.armed {
		c.timer.Stop()
		c.armed = false
	}
	if c.held == nil {
		return c.err
	}
	b := c.held
	c.held = nil
	other := !c.heldDL.Equal(c.wdl)
	if other {
		c.Conn.SetWriteDeadline(c.heldDL)
	}
	_, err := c.Conn.Write(*b)
	if other {
		c.Conn.SetWriteDeadline(c.wdl)
	}
	*b = (*b)[:0]
	holdBufs.Put(b)
	if err != nil && c.err == nil {
		c.err = err
	}
	return c.err
}

func (c *coalescer) flush() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.flushLocked()
}

// expire writes out what has been held for holdTime.
func (c *coalescer) expire() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.armed = false
	c.flushLocked()
}

// Read writes out what is held before it reads, except on a read of one
// byte: net/http's watch for the client's going away, which it starts
// while a request is being answered and ends after, whatever else it
// holds; the answers to the requests it holds are then still to come.
// Should a read of another kind be of one byte, what is held goes out
// on the timer.
func (c *coalescer) Read(p []byte) (int, error) {
	if len(p) != 1 {
		if err := c.flush(); err != nil {
			return 0, err
		}
	}
	n, err := c.Conn.Read(p)
	if !c.read && n > 0 {
		// Only Read sets read, on the server's one reading goroutine
		// (the first read is done before any write).
		c.read = true
		if bytes.HasPrefix(p[:n], h2Preface) {
			c.mu.Lock()
			c.h2 = true
			c.mu.Unlock()
		}
	}
	return n, err
}

// ReadFrom writes out what is held and hands src to the connection's
// ReadFrom: net/http's sendfile of a file.
func (c *coalescer) ReadFrom(src io.Reader) (int64, error) {
	if err := c.flush(); err != nil {
		return 0, err
	}
	if rf, ok := c.Conn.(io.ReaderFrom); ok {
		return rf.ReadFrom(src)
	}
	return io.Copy(struct{ io.Writer }{c.Conn}, src)
}

// CloseWrite writes out what is held and shuts the connection for
// writing, as net/http does before it closes a connection whose request
// it has not read whole.
func (c *coalescer) CloseWrite() error {
	if err := c.flush(); err != nil {
		return err
	}
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// Close writes out what is held and closes the connection. While a
// write is under way (http.Server.Close or Shutdown, from another
// goroutine, closing a connection net/http counts as idle while its last
// answers still go out to a client slow to take them), it closes at
// once, which ends that write, as Server.Close ends net/http's: Close
// never waits on a client.
func (c *coalescer) Close() error {
	if c.mu.TryLock() {
		c.flushLocked()
		c.mu.Unlock()
	}
	return c.Conn.Close()
}

func (c *coalescer) SetWriteDeadline(t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.wdl = t
	return c.Conn.SetWriteDeadline(t)
}

func (c *coalescer) SetDeadline(t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.wdl = t
	return c.Conn.SetDeadline(t)
}
