package httpc

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/textproto"
	"net/url"
	"slices"
	"strings"
	"sync"
)

// Pipeline GETs resources announced ahead (Add) over one kept-alive
// plain-http connection, writing up to depth requests before it reads
// their responses, in order (HTTP/1.1 pipelining, RFC 9112 §9.3.2): for a
// list of small resources one write carries several requests and one
// read often several responses, where a request at a time costs a write,
// a read and a wait on each side. Next(url) returns what Open(url) would;
// whatever the pipeline does not do (another scheme, a proxy, a URL with
// a user and password, a client with a time-out, a redirect, a
// connection that failed or that the server closed with requests on it)
// Next does through Open, so that the
// pipeline only saves round trips: a response it hands out is the one to
// its URL's request, and Open's checks hold for it.
//
// A Pipeline is one goroutine's. The body Next returns is read to its end
// or closed before Next is called again; one still open then loses the
// connection (the requests written on it are sent again on another).
type Pipeline struct {
	c     *http.Client
	t     *transport // nil: every Next is Open
	depth int
	ua    string // the User-Agent line as Request.Write writes it

	mu     sync.Mutex // the body's release may run on another goroutine
	queue  []announced
	sent   int       // queue[:sent] are written on conn
	conn   *leanConn // nil: none yet, or dropped
	key    string    // conn's host:port
	served int       // responses read on conn
	open   bool      // a body Next returned is not finished
}

type announced struct {
	url  string // as the caller names it
	req  *http.Request
	key  string // its host:port
	wire string // the request as Request.Write writes it (getRequest)
}

// NewPipeline returns a pipeline on c (nil: Default()) that writes at most
// depth requests ahead; depth 1 or less sends each on its own, as Open.
func NewPipeline(c *http.Client, depth int) *Pipeline {
	if c == nil {
		c = Default()
	}
	p := &Pipeline{c: c, depth: depth}
	if t, ok := c.Transport.(*transport); ok && t.lean != nil && c.Timeout <= 0 && c.Jar == nil && depth > 1 {
		p.t = t
		p.ua = userAgentLine(t.ua)
	}
	return p
}

// Add announces a GET of rawURL that Next will be asked for, after those
// announced before it. A URL the pipeline cannot send is left to Open.
func (p *Pipeline) Add(rawURL string) {
	if p.t == nil {
		return
	}
	req, err := http.NewRequest(http.MethodGet, rawURL, nil)
	if err != nil || !p.t.lean.plain(req) || req.URL.User != nil {
		return // a user and password in the URL: http.Client's to send
	}
	wire, ok := getRequest(req, p.ua)
	if !ok {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.queue = append(p.queue, announced{url: rawURL, req: req, key: hostKey(req.URL), wire: wire})
}

// getRequest is the GET req as Request.Write writes it with the
// User-Agent line ua (userAgentLine) and no other field set, built once without Request.Write's
// cost: the request line, Host and User-Agent. ok is false for a request
// Request.Write would change or refuse: a host it would rewrite (not
// ASCII, a zone) or drop (a byte a Host field cannot carry), a target
// with a control byte; those go through Open.
func getRequest(req *http.Request, ua string) (wire string, ok bool) {
	host, target := req.Host, req.URL.RequestURI()
	if !plainHost(host) {
		return "", false
	}
	for i := range len(target) {
		if b := target[i]; b < ' ' || b == 0x7f {
			return "", false
		}
	}
	return "GET " + target + " HTTP/1.1\r\nHost: " + host + "\r\n" + ua + "\r\n", true
}

// plainHost says whether Request.Write sends host as it is: ASCII (no
// punycode), no zone, only bytes a Host field carries.
func plainHost(host string) bool {
	for i := range len(host) {
		switch b := host[i]; {
		case 'a' <= b && b <= 'z', 'A' <= b && b <= 'Z', '0' <= b && b <= '9':
		case strings.IndexByte("-._~:[]", b) >= 0:
		default:
			return false
		}
	}
	return true
}

// userAgentLine is the User-Agent line Request.Write writes for ua:
// none for "", else ua with line breaks as spaces, no space around.
func userAgentLine(ua string) string {
	if ua == "" {
		return ""
	}
	return "User-Agent: " + textproto.TrimString(strings.NewReplacer("\n", " ", "\r", " ").Replace(ua)) + "\r\n"
}

// Next GETs rawURL as Open does, from the connection when it was
// announced; those announced before it and not asked for are dropped.
func (p *Pipeline) Next(ctx context.Context, rawURL string, maxBytes int64) (io.ReadCloser, error) {
	a, onWire, ok := p.take(rawURL)
	if !ok {
		return Open(ctx, p.c, rawURL, maxBytes)
	}
	resp, err := p.receive(ctx, a, onWire)
	if err == nil && resp.StatusCode >= 300 && resp.StatusCode <= 399 {
		resp.Body.Close() // the client's redirect policy is Open's to apply
		err = errRedirect
	}
	if err != nil {
		var ne net.Error
		if ctx.Err() == nil && errors.As(err, &ne) && ne.Timeout() {
			if !onWire {
				// Written first on the connection and not answered in
				// the time-out: Open's verdict, which would wait as
				// long again.
				return nil, &url.Error{Op: "Get", URL: a.req.URL.Redacted(), Err: err}
			}
			// Written behind another and never answered: a server that
			// loses pipelined requests would cost a time-out for every
			// one; Open sends this one again, and from now on they go
			// one at a time.
			p.mu.Lock()
			p.depth = 1
			p.mu.Unlock()
		}
		return Open(ctx, p.c, rawURL, maxBytes)
	}
	// The watch stops the request by cutting the connection short, as
	// the end of ctx does: no context of its own for each response.
	u := a.req.URL.Redacted()
	p.t.watch(resp, u, true, resp.Body.(*leanBody).cut)
	countBody(ctx, resp)
	_, rc, err := checkResponse(u, a.req, resp, maxBytes)
	return rc, err
}

// errRedirect is a pipelined response that redirects: Open follows it.
var errRedirect = &StatusError{Code: http.StatusFound}

// take takes rawURL's request off the queue, dropping the connection when
// requests announced before it are on it (their responses come first);
// onWire: the request is written on the connection, its response next.
func (p *Pipeline) take(rawURL string) (a announced, onWire, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.open {
		p.dropLocked() // the last body is not finished: its response is in the way
	}
	i := slices.IndexFunc(p.queue, func(a announced) bool { return a.url == rawURL })
	if i < 0 {
		return announced{}, false, false
	}
	if i > 0 && p.sent > 0 {
		p.dropLocked()
	}
	a = p.queue[i]
	p.queue = p.queue[i+1:]
	if p.sent > 0 {
		p.sent--
		return a, true, true
	}
	if p.conn != nil && p.conn.key != a.key {
		p.dropLocked()
	}
	return a, false, true
}

// receive reads a's response, first writing a's request and those
// announced after it for the same host, up to depth, when nothing is on
// the connection: one write for all of them.
func (p *Pipeline) receive(ctx context.Context, a announced, onWire bool) (*http.Response, error) {
	if p.conn == nil {
		c, _, err := p.t.lean.get(ctx, a.key, false)
		if err != nil {
			return nil, err
		}
		p.mu.Lock()
		p.conn, p.served = c, 0
		p.mu.Unlock()
	}
	c := p.conn
	var write func() error // nil: a's request is on the wire already
	if !onWire {
		write = func() error { return p.write(a) }
	}
	resp, err := p.t.lean.receive(ctx, c, a.req, write, p.release)
	p.mu.Lock()
	defer p.mu.Unlock()
	if err != nil {
		p.dropLocked()
		return nil, err
	}
	p.served++
	p.open = true
	if resp.Close && p.served == 1 && p.sent > 0 {
		// The server keeps no connection alive: what is written
		// behind a request is lost, and sent again, on every one.
		p.depth = 1
	}
	return resp, nil
}

// write writes a's request and, behind it, those announced for the same
// host, up to depth in all.
func (p *Pipeline) write(a announced) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	c := p.conn
	c.bw.WriteString(a.wire)
	for p.sent < len(p.queue) && p.sent+1 < p.depth && p.queue[p.sent].key == a.key {
		c.bw.WriteString(p.queue[p.sent].wire)
		p.sent++
	}
	return c.bw.Flush()
}

// release is the body's: a response read to its end leaves the
// connection to the next one; any other end drops it.
func (p *Pipeline) release(c *leanConn, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if c != p.conn {
		c.Close()
		return
	}
	p.open = false
	if !ok {
		p.dropLocked()
	}
}

// dropLocked closes the connection; the requests on it are to be written
// again.
func (p *Pipeline) dropLocked() {
	if p.conn != nil {
		p.conn.Close()
	}
	p.conn, p.sent, p.open = nil, 0, false
}

// Close gives the connection back to the client's pool when nothing is
// left on it, else closes it.
func (p *Pipeline) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.conn != nil && p.sent == 0 && !p.open {
		p.t.lean.put(p.conn)
		p.conn = nil
	}
	p.dropLocked()
	p.queue = nil
}

// hostKey is the connection a URL's request goes on: host:port.
func hostKey(u *url.URL) string {
	if u.Port() == "" {
		return net.JoinHostPort(u.Hostname(), "80")
	}
	return u.Host
}
