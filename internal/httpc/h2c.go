package httpc

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
)

// H2CMode says when a plain http:// request speaks HTTP/2 with prior
// knowledge (h2c): the client sends the HTTP/2 preface at once, with no
// HTTP/1.1 Upgrade, which only a server that speaks h2c understands
// (curl's --http2-prior-knowledge). A request through a proxy never does.
type H2CMode int

const (
	// H2CAuto: to a host:port that said it speaks h2c, in an
	// "Alt-Svc: h2c=":PORT"" field of a response over HTTP/1.1 naming
	// the port asked (rsdump serve sends it), from the next request on,
	// for the client's life. A request over h2c that fails before its
	// response (the server no longer speaks it, or the field came
	// through a proxy that passed on another server's) forgets the host
	// for the client's life, and goes again over HTTP/1.1 when it can be
	// sent again.
	H2CAuto H2CMode = iota
	// H2CNever: plain http is HTTP/1.1.
	H2CNever
	// H2CAlways: every plain http request speaks h2c, and fails on a
	// server that does not.
	H2CAlways
)

// h2c sends plain http requests over HTTP/2 with prior knowledge to the
// hosts known to speak it, and the others through base.
type h2c struct {
	t      *http.Transport // base's settings; speaks h2c only
	base   *http.Transport
	always bool
	mu     sync.RWMutex
	hosts  map[string]bool // host:port that said it speaks h2c
	failed map[string]bool // host:port where h2c failed: not learned again
}

func newH2C(base *http.Transport, mode H2CMode) *h2c {
	t := base.Clone()
	var p http.Protocols
	p.SetUnencryptedHTTP2(true)
	t.Protocols = &p
	t.Proxy = nil
	return &h2c{t: t, base: base, always: mode == H2CAlways, hosts: map[string]bool{}, failed: map[string]bool{}}
}

func (h *h2c) roundTrip(r *http.Request) (*http.Response, error) {
	key := hostPort(r.URL)
	if h.always || h.knows(key) {
		if proxied, err := h.proxied(r); err != nil || !proxied {
			resp, err := h.t.RoundTrip(r)
			if err == nil || h.always || !fallBack(r, err) {
				return resp, err
			}
			h.forget(key)
			if r, err = rewound(r); err != nil {
				return nil, err
			}
		}
	}
	resp, err := h.base.RoundTrip(r)
	if err == nil && !h.always && resp.ProtoMajor == 1 {
		h.learn(r, key, resp.Header.Values("Alt-Svc"))
	}
	return resp, err
}

// proxied says whether r goes through a proxy.
func (h *h2c) proxied(r *http.Request) (bool, error) {
	if h.base.Proxy == nil {
		return false, nil
	}
	u, err := h.base.Proxy(r)
	return u != nil, err
}

// fallBack says whether a request that failed over h2c goes again over
// HTTP/1.1: it can be sent again, and failed for want of an answer, not
// for its context nor after the header time-out (which it would wait
// again).
func fallBack(r *http.Request, err error) bool {
	var ne net.Error
	switch {
	case !replayable(r), r.Context().Err() != nil, errors.Is(err, context.Canceled),
		errors.As(err, &ne) && ne.Timeout():
		return false
	}
	return true
}

func (h *h2c) knows(key string) bool {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.hosts[key]
}

// forget drops key for good: a server whose h2c failed, or whose
// Alt-Svc came from another, would fail each request over h2c again.
func (h *h2c) forget(key string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.hosts, key)
	h.failed[key] = true
}

// learn takes what a response's Alt-Svc fields say of h2c on r's host:
// offered at its port, or all alternatives cleared. A response that came
// through a proxy says nothing of the server.
func (h *h2c) learn(r *http.Request, key string, altSvc []string) {
	if len(altSvc) == 0 {
		return
	}
	offer, clear := altSvcH2C(altSvc, r.URL.Hostname(), portOf(r.URL))
	if !offer && !clear {
		return
	}
	if proxied, err := h.proxied(r); err != nil || proxied {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if offer && !h.failed[key] {
		h.hosts[key] = true
	} else {
		delete(h.hosts, key)
	}
}

// altSvcH2C reads Alt-Svc field values (RFC 7838 3): offer is an
// alternative of protocol h2c at host (or no host) and port; clear is
// the value "clear", which withdraws every alternative.
func altSvcH2C(values []string, host, port string) (offer, clear bool) {
	for _, v := range values {
		for alt := range strings.SplitSeq(v, ",") {
			alt = strings.TrimSpace(alt)
			if alt == "clear" {
				return false, true
			}
			proto, authority, ok := strings.Cut(strings.TrimSpace(strings.Split(alt, ";")[0]), "=")
			if !ok || strings.TrimSpace(proto) != "h2c" {
				continue
			}
			authority = strings.Trim(strings.TrimSpace(authority), `"`)
			h, p, err := net.SplitHostPort(authority)
			if err == nil && p == port && (h == "" || strings.EqualFold(h, host)) {
				offer = true
			}
		}
	}
	return offer, false
}

// hostPort is the host:port a URL's request connects to.
func hostPort(u *url.URL) string { return net.JoinHostPort(u.Hostname(), portOf(u)) }

// portOf is a URL's port, its scheme's when it names none.
func portOf(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	if u.Scheme == "https" {
		return "443"
	}
	return "80"
}
