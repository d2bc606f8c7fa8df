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
	"sync"
	"sync/atomic"
	"time"
)

// lean sends the GETs of documents and resources (DoResponse's) over
// plain http on kept-alive HTTP/1.1 connections of its own, one request
// at a time on each, written and read by the caller's goroutine.
// net/http's Transport runs a reader and a writer goroutine per
// connection and hands each request and response between them and the
// caller; for a list of small resources that cost sync as much CPU as the
// files' own system calls (50 µs a request against 28 on loopback). The
// request is written and the response parsed by net/http
// (Request.Write, ReadResponse; a Pipeline writes the bytes Request.Write
// would, built once, see getRequest), so that only the connection's life
// is lean's: a GET on a kept-alive connection the server had closed is sent
// once more on a new one, as net/http does; a body read to its end gives
// the connection back, one closed before gives it up. Everything else (a
// proxy, https, a request with a body) goes to the Transport.
type lean struct {
	base  *http.Transport // its dialer, proxy, header timeout and pool sizes
	mu    sync.Mutex
	idle  map[string][]*leanConn // by host:port, the last put last
	nIdle int
}

// leanConn is one connection and what was read on it since the request
// was sent.
type leanConn struct {
	net.Conn
	br    *bufio.Reader
	bw    *bufio.Writer
	key   string
	since time.Time // idle since
	read  int64     // bytes read since the last request was sent
	// header is how many bytes more the response header being read may
	// take from the connection, of headerMax; -1 when no header is being
	// read.
	header, headerMax int64
}

func (c *leanConn) Read(p []byte) (int, error) {
	if c.header >= 0 {
		if c.header == 0 {
			return 0, fmt.Errorf("the response header is over %d bytes", c.headerMax)
		}
		p = p[:min(int64(len(p)), c.header)]
	}
	n, err := c.Conn.Read(p)
	c.read += int64(n)
	if c.header >= 0 {
		c.header -= int64(n)
	}
	return n, err
}

// maxHeaderBytes is what a response header may take from the connection
// when the Transport sets no MaxResponseHeaderBytes: its own default.
// ReadResponse reads a header line however long, and the header however
// many lines; a server sending one without end would grow the client's
// memory until the header time-out, a minute.
const maxHeaderBytes = 10 << 20

// takes says whether lean sends r.
func (l *lean) takes(r *http.Request) bool {
	return r.Context().Value(judgedKey{}) != nil && l.plain(r)
}

// plain says whether r is a GET lean can send: over http, with no body,
// and with no proxy.
func (l *lean) plain(r *http.Request) bool {
	if r.URL.Scheme != "http" || r.Method != http.MethodGet || (r.Body != nil && r.Body != http.NoBody) {
		return false
	}
	if l.base.Proxy != nil {
		if u, err := l.base.Proxy(r); err != nil || u != nil {
			return false
		}
	}
	return true
}

// aLongTimeAgo is a deadline that makes every read and write fail at
// once.
var aLongTimeAgo = time.Unix(1, 0)

func (l *lean) roundTrip(r *http.Request) (*http.Response, error) {
	key := hostKey(r.URL)
	ctx := r.Context()
	for retried := false; ; retried = true {
		c, reused, err := l.get(ctx, key, retried)
		if err != nil {
			return nil, err
		}
		resp, err := l.send(ctx, c, r)
		if err == nil {
			return resp, nil
		}
		c.Close()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		var ne net.Error
		if !reused || retried || c.read > 0 || errors.As(err, &ne) && ne.Timeout() {
			return nil, err
		}
		// A kept connection the server had closed: the others kept for
		// the host, idle as long, most likely are too (no reader watches
		// them, as the Transport's does). They go, and the request is
		// sent once more on a new connection.
		l.dropIdle(key)
	}
}

// dropIdle closes the connections kept for key.
func (l *lean) dropIdle(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, c := range l.idle[key] {
		c.Close()
	}
	l.nIdle -= len(l.idle[key])
	delete(l.idle, key)
}

// send writes r on c and reads the response's header.
func (l *lean) send(ctx context.Context, c *leanConn, r *http.Request) (*http.Response, error) {
	c.read = 0
	return l.receive(ctx, c, r, func() error {
		if err := r.Write(c.bw); err != nil {
			return err
		}
		return c.bw.Flush()
	}, l.release)
}

// receive runs write (sending r, or r and the requests after it, on c;
// nil when they are sent already), then reads r's response header; the
// body gives c to release when it is finished, ok if c can carry the
// next response.
func (l *lean) receive(ctx context.Context, c *leanConn, r *http.Request, write func() error, release func(c *leanConn, ok bool)) (*http.Response, error) {
	// The header time-out runs from before the write, as the
	// Transport's from the request sent; a header buffered whole already
	// (a pipelined response, read with those before it) cannot wait, and
	// is read with no deadline set and cleared, two a response.
	t := l.base.ResponseHeaderTimeout
	timed := false
	if t > 0 && !headerBuffered(c.br) {
		c.SetReadDeadline(time.Now().Add(t))
		timed = true
	}
	stop := context.AfterFunc(ctx, func() { c.SetDeadline(aLongTimeAgo) })
	var err error
	if write != nil {
		err = write()
	}
	var resp *http.Response
	c.header = l.headerLimit()
	c.headerMax = c.header
	defer func() { c.header = -1 }()
	for informational := 0; err == nil; informational++ {
		if t > 0 && !timed && !headerBuffered(c.br) {
			// After a buffered 1xx, the rest is still to come.
			c.SetReadDeadline(time.Now().Add(t))
			timed = true
		}
		resp, err = http.ReadResponse(c.br, r)
		if err != nil || resp.StatusCode >= 200 || resp.StatusCode == http.StatusSwitchingProtocols {
			break
		}
		// 1xx: the response is still to come; at most 5, as net/http.
		if informational == 5 {
			err = errors.New("too many 1xx informational responses")
		}
	}
	if err == nil {
		if timed {
			c.SetReadDeadline(time.Time{})
		}
		if ctx.Err() != nil {
			c.SetDeadline(aLongTimeAgo) // the AfterFunc may have run before
		}
	}
	if err != nil {
		stop()
		return nil, err
	}
	keep := !resp.Close && !r.Close && resp.StatusCode != http.StatusSwitchingProtocols
	chunked := len(resp.TransferEncoding) > 0
	resp.Body = &leanBody{ctx: ctx, c: c, rc: resp.Body, stop: stop, keep: keep, chunked: chunked, release: release}
	return resp, nil
}

// headerLimit is what a response header may take from a connection:
// the Transport's MaxResponseHeaderBytes, as for the requests it sends.
// What was buffered before the header began (pipelined responses read
// with those before them, at most a buffer) does not count.
func (l *lean) headerLimit() int64 {
	if n := l.base.MaxResponseHeaderBytes; n > 0 {
		return n
	}
	return maxHeaderBytes
}

// headerBuffered says whether br holds a response header whole, up to
// the blank line that ends it (a line ends with LF or CRLF, as
// ReadResponse reads it), so that reading it cannot wait.
func headerBuffered(br *bufio.Reader) bool {
	b, _ := br.Peek(br.Buffered())
	for {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			return false
		}
		b = b[i+1:]
		if len(b) > 0 && b[0] == '\n' || len(b) > 1 && b[0] == '\r' && b[1] == '\n' {
			return true
		}
	}
}

// release keeps a connection whose body was read to its end, and closes
// any other.
func (l *lean) release(c *leanConn, ok bool) {
	if ok {
		l.put(c)
	} else {
		c.Close()
	}
}

// get returns an idle connection to key, else (or when fresh) a new one.
func (l *lean) get(ctx context.Context, key string, fresh bool) (*leanConn, bool, error) {
	l.mu.Lock()
	for cs := l.idle[key]; len(cs) > 0 && !fresh; cs = l.idle[key] {
		c := cs[len(cs)-1]
		l.idle[key] = cs[:len(cs)-1]
		l.nIdle--
		if time.Since(c.since) < l.base.IdleConnTimeout || l.base.IdleConnTimeout <= 0 {
			l.mu.Unlock()
			return c, true, nil
		}
		c.Close()
	}
	l.mu.Unlock()
	dial := l.base.DialContext
	if dial == nil {
		dial = (&net.Dialer{}).DialContext
	}
	nc, err := dial(ctx, "tcp", key)
	if err != nil {
		return nil, false, err
	}
	c := &leanConn{Conn: nc, key: key, header: -1}
	size := l.base.ReadBufferSize
	if size <= 0 {
		size = 4 << 10
	}
	c.br = bufio.NewReaderSize(c, size)
	c.bw = bufio.NewWriterSize(nc, 4<<10)
	return c, false, nil
}

// put keeps c for the next request to its host, within the Transport's
// bounds.
func (l *lean) put(c *leanConn) {
	l.mu.Lock()
	defer l.mu.Unlock()
	perHost, all := l.base.MaxIdleConnsPerHost, l.base.MaxIdleConns
	if perHost <= 0 {
		perHost = http.DefaultMaxIdleConnsPerHost
	}
	if c.br.Buffered() > 0 || len(l.idle[c.key]) >= perHost || all > 0 && l.nIdle >= all {
		c.Close()
		return
	}
	if l.idle == nil {
		l.idle = map[string][]*leanConn{}
	}
	l.expireLocked(c.key)
	c.since = time.Now()
	l.idle[c.key] = append(l.idle[c.key], c)
	l.nIdle++
}

// expireLocked closes the connections kept for key past the Transport's
// idle time-out, which get would refuse anyway: they are not left
// half-closed until the host is asked again. l.mu is held.
func (l *lean) expireLocked(key string) {
	t := l.base.IdleConnTimeout
	if t <= 0 {
		return
	}
	cs := l.idle[key]
	n := 0
	for _, c := range cs {
		if time.Since(c.since) < t {
			cs[n] = c
			n++
		} else {
			c.Close()
		}
	}
	l.nIdle -= len(cs) - n
	l.idle[key] = cs[:n]
}

// closeIdle closes the connections kept.
func (l *lean) closeIdle() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, cs := range l.idle {
		for _, c := range cs {
			c.Close()
		}
	}
	l.idle, l.nIdle = nil, 0
}

// leanBody is a response body on a lean connection: read to its end, it
// gives the connection back; closed before, it closes it (what is left
// is not read). Close may come from another goroutine than Read's.
type leanBody struct {
	ctx     context.Context
	c       *leanConn
	rc      io.ReadCloser
	stop    func() bool
	keep    bool
	chunked bool                       // its reads may wait on a chunk's header with bytes buffered
	release func(c *leanConn, ok bool) // once, when finished
	done    atomic.Bool                // finished: at its end, or closed
	eof     bool                       // Read's
}

var errBodyClosed = errors.New("http: read on closed response body")

func (b *leanBody) Read(p []byte) (int, error) {
	switch {
	case b.eof:
		return 0, io.EOF
	case b.done.Load():
		return 0, errBodyClosed
	}
	if err := b.ctx.Err(); err != nil {
		b.finish(false)
		return 0, err // cancelled: not the bytes that happened to be buffered
	}
	n, err := b.rc.Read(p)
	if err == io.EOF {
		b.eof = true
		b.finish(true)
	}
	return n, err
}

func (b *leanBody) Close() error {
	b.finish(false)
	return nil
}

// ready says whether the next Read returns without waiting on the
// network: bytes of the body are already buffered (net/http's body reads
// a length or an end of connection from the buffer first; a chunked
// body may wait for the rest of a chunk's header).
func (b *leanBody) ready() bool {
	return !b.chunked && b.c.br.Buffered() > 0
}

// cut makes the connection's reads fail at once, as the end of the
// body's context does, unless the body is finished: a connection given
// back is not cut.
func (b *leanBody) cut() {
	if b.stop() {
		b.c.SetDeadline(aLongTimeAgo)
	}
}

func (b *leanBody) finish(eof bool) {
	if !b.done.CompareAndSwap(false, true) {
		return
	}
	ok := b.stop() && eof && b.keep
	if ok {
		b.rc.Close() // at its end: reads nothing more
	}
	b.release(b.c, ok)
}
