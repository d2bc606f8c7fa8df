package serve

import (
	"io"
	"math"
	"net"
	"net/http"
	"time"
)

// Timeouts bound how long a client may hold a connection without moving
// it on. A zero field takes its value from DefaultTimeouts.
type Timeouts struct {
	// ReadHeader is how long a client has to send a request's header,
	// once the connection is open or has a request's first bytes: one
	// that dribbles its header, or sends nothing, is let go then.
	ReadHeader time.Duration
	// Read bounds the reading of a whole request, body included. Past it,
	// a request's context is done (net/http), which the handler New
	// returns does not look at: a response still goes out under Write.
	Read time.Duration
	// Write is how long a client has to take each WriteChunk bytes of a
	// response. The deadline moves on as the bytes go out, so that a long
	// download over a slow link is not cut off while it moves; one that
	// stalls is.
	Write time.Duration
	// Idle is how long a kept-alive connection waits for the next
	// request.
	Idle time.Duration
}

// DefaultTimeouts are the timeouts NewServer uses for zero fields.
var DefaultTimeouts = Timeouts{ReadHeader: 10 * time.Second, Read: 30 * time.Second, Write: time.Minute, Idle: 2 * time.Minute}

// WriteChunk is how much of a response goes out under one write
// deadline: with the default Write, a client slower than about 2 KiB/s
// is cut off.
const WriteChunk = 128 << 10

// NewServer returns an http.Server for h with the timeouts t. It speaks
// HTTP/1.1 and, on plain connections, HTTP/2 with prior knowledge (h2c,
// RFC 9113 3.3), which it announces on each HTTP/1.1 answer with
// "Alt-Svc: h2c=":PORT"" (PORT the one the client asked, altPort), so
// that rsdump's client (httpc) sends the next requests as streams of one
// connection. A client that does not know the field ignores it.
func NewServer(h http.Handler, t Timeouts) *http.Server {
	t = t.withDefaults()
	paced := func(w http.ResponseWriter, r *http.Request) {
		if r.ProtoMajor == 1 && r.TLS == nil {
			if port := altPort(r); port != "" {
				w.Header().Set("Alt-Svc", `h2c=":`+port+`"`)
			}
		}
		h.ServeHTTP(&deadlineWriter{ResponseWriter: w, rc: http.NewResponseController(w), d: t.Write}, r)
	}
	var protos http.Protocols
	protos.SetHTTP1(true)
	protos.SetUnencryptedHTTP2(true)
	return &http.Server{
		Handler:           http.HandlerFunc(paced),
		ReadHeaderTimeout: t.ReadHeader,
		ReadTimeout:       t.Read,
		WriteTimeout:      t.Write, // a response's first deadline, moved on by deadlineWriter
		IdleTimeout:       t.Idle,
		Protocols:         &protos,
	}
}

// altPort is the port h2c is announced at: the one the client asked, in
// the Host field, which is not the one serve listens on behind a port
// map or a TCP relay (a container's published port, a tunnel); else the
// port of the address the request came in on; "" when unknown. An HTTP
// proxy in front that passes the field on to a client costs that client
// one failed h2c attempt (httpc then speaks HTTP/1.1 to it).
func altPort(r *http.Request) string {
	if _, port, err := net.SplitHostPort(r.Host); err == nil && port != "" {
		return port
	}
	return localPort(r)
}

// localPort is the port of the address a request came in on; "" when
// unknown.
func localPort(r *http.Request) string {
	a, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok {
		return ""
	}
	_, port, err := net.SplitHostPort(a.String())
	if err != nil {
		return ""
	}
	return port
}

func (t Timeouts) withDefaults() Timeouts {
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&t.ReadHeader, DefaultTimeouts.ReadHeader)
	def(&t.Read, DefaultTimeouts.Read)
	def(&t.Write, DefaultTimeouts.Write)
	def(&t.Idle, DefaultTimeouts.Idle)
	return t
}

// deadlineWriter sets the connection's write deadline d ahead before each
// WriteChunk bytes it writes. It keeps io.ReaderFrom, handing each chunk
// on as one *io.LimitedReader over the reader it was given, so that a
// file still goes out with sendfile; and Unwrap, for
// http.ResponseController.
type deadlineWriter struct {
	http.ResponseWriter
	rc *http.ResponseController
	d  time.Duration
}

// extend moves the deadline on. Where it cannot be set, the server's
// WriteTimeout stands.
func (w *deadlineWriter) extend() { _ = w.rc.SetWriteDeadline(time.Now().Add(w.d)) }

func (w *deadlineWriter) Write(p []byte) (int, error) {
	n := 0
	for len(p) > 0 {
		w.extend()
		k, err := w.ResponseWriter.Write(p[:min(len(p), WriteChunk)])
		n += k
		if err != nil {
			return n, err
		}
		p = p[k:]
	}
	return n, nil
}

func (w *deadlineWriter) ReadFrom(src io.Reader) (int64, error) {
	rf, ok := w.ResponseWriter.(io.ReaderFrom)
	if !ok {
		return io.Copy(struct{ io.Writer }{w}, src)
	}
	lr, ok := src.(*io.LimitedReader)
	if !ok {
		lr = &io.LimitedReader{R: src, N: math.MaxInt64}
	}
	var n int64
	for lr.N > 0 {
		chunk := min(lr.N, WriteChunk)
		w.extend()
		k, err := rf.ReadFrom(&io.LimitedReader{R: lr.R, N: chunk})
		n += k
		lr.N -= k
		if err != nil || k < chunk {
			return n, err
		}
	}
	return n, nil
}

func (w *deadlineWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
