// Package httpc is rsdump's one way to build an HTTP client, and its one
// HTTP client: net/http's Transport, one per client, shared by every fetch
// of a run. It speaks HTTP/1.1 with keep-alive, HTTP/2 over TLS where the
// server offers it (ALPN), and HTTP/2 over plain TCP with prior knowledge
// (h2c) to a server known to speak it (see H2C). Every client it builds
// sets a User-Agent naming rsdump and its version, takes proxies from the
// environment, bounds the time to connect, to shake hands and to wait for
// response headers, fails a response body that delivers no byte for the
// stall timeout, follows at most a few redirects, only to http and https,
// and sends a GET again on a new connection when a server answered it 408
// on a connection it was closing. Open fetches a document with a size
// cap, and holds its body to a minimum speed; DoRetry does it again after
// a failure that passes, a bounded number of times. Every error names the
// URL.
package httpc

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"runtime"
	"sync"
	"syscall"
	"time"

	"github.com/rsdump/rsdump/internal/opt"
	"github.com/rsdump/rsdump/internal/s3x"
	"github.com/rsdump/rsdump/s3"
	"github.com/rsdump/rsdump/version"
)

// Options tune a client. Zero values take the defaults in brackets.
type Options struct {
	ConnectTimeout        time.Duration // to open a TCP connection [30s]
	TLSHandshakeTimeout   time.Duration // [30s]
	ResponseHeaderTimeout time.Duration // from the request sent to the response headers [60s]
	StallTimeout          time.Duration // a response body delivering no byte for this long fails [60s]
	Timeout               time.Duration // the whole exchange, body included [none]

	// MinSpeed is the lowest speed, in bytes/s, of a document or resource
	// body that Open, Do or DoResponse returns: once a read has waited
	// MinSpeedWindow in all, and at each window after, a body that
	// delivered less over the window fails with a *SpeedError (a drip
	// that never stalls long enough for StallTimeout). Only time spent
	// waiting inside Read counts: a caller busy between reads is not a
	// slow server. Bodies read through the client's own Do are not
	// judged: transfer judges each mirror over all its connections, with
	// the same Pace. [0: off; the window 30s]
	MinSpeed       int64
	MinSpeedWindow time.Duration

	MaxIdleConns        int           // idle connections kept, over all hosts [100]
	MaxIdleConnsPerHost int           // idle connections kept per host [GOMAXPROCS, at least 4]
	MaxConnsPerHost     int           // connections per host, 0 for no limit [0]
	IdleConnTimeout     time.Duration // an idle connection is closed after this [90s]
	ReadBufferSize      int           // per connection [the net/http default, 4 KiB]
	DisableCompression  bool          // send no Accept-Encoding: gzip of our own

	// H2C says when a plain http:// request speaks HTTP/2 with prior
	// knowledge (h2c, RFC 9113 3.3) rather than HTTP/1.1. [H2CAuto]
	H2C H2CMode
	// HTTP1 speaks HTTP/1.1 only: no HTTP/2 over TLS, no h2c (H2C is
	// then ignored), as curl --http1.1 does; for a server or proxy whose
	// HTTP/2 misbehaves, and to compare the two.
	HTTP1 bool
	// RootCAs, when set, are the certificate authorities an https
	// server's certificate must chain to, in place of the system's
	// (which SSL_CERT_FILE and SSL_CERT_DIR name as for OpenSSL).
	RootCAs *x509.CertPool

	MaxRedirects int // redirects followed [10]

	// Proxy, when set, names the proxy of each request (nil: none), in
	// place of the environment's HTTP_PROXY, HTTPS_PROXY and NO_PROXY
	// (which leave out loopback addresses).
	Proxy func(*http.Request) (*url.URL, error)

	// DialControl, when set, checks the address of every connection
	// before it is made (net.Dialer.Control): a hub refuses its own
	// network with it. No proxy is used then, since the check must see
	// the address really connected to.
	DialControl func(network, address string, c syscall.RawConn) error

	// Retry bounds the retries of a document fetched through DoRetry
	// (the one document opener, resourcesync.Opener) with this client.
	Retry Retry
}

// Defaults.
const (
	DefaultConnectTimeout      = 30 * time.Second
	DefaultTLSHandshakeTimeout = 30 * time.Second
	DefaultHeaderTimeout       = 60 * time.Second
	DefaultStallTimeout        = 60 * time.Second
	DefaultMinSpeedWindow      = 30 * time.Second
	DefaultMaxRedirects        = 10
)

func (o Options) withDefaults() Options {
	opt.Default(&o.ConnectTimeout, DefaultConnectTimeout)
	opt.Default(&o.TLSHandshakeTimeout, DefaultTLSHandshakeTimeout)
	opt.Default(&o.ResponseHeaderTimeout, DefaultHeaderTimeout)
	opt.Default(&o.StallTimeout, DefaultStallTimeout)
	opt.Default(&o.MinSpeedWindow, DefaultMinSpeedWindow)
	opt.Default(&o.IdleConnTimeout, 90*time.Second)
	opt.Default(&o.MaxIdleConns, 100)
	opt.Default(&o.MaxIdleConnsPerHost, max(4, runtime.GOMAXPROCS(0))) // verify reads GOMAXPROCS packages at once
	opt.Default(&o.MaxRedirects, DefaultMaxRedirects)
	return o
}

// New returns a client with o's settings.
func New(o Options) *http.Client {
	o = o.withDefaults()
	return &http.Client{
		Transport:     NewTransport(o),
		CheckRedirect: checkRedirect(o.MaxRedirects),
		Timeout:       o.Timeout,
	}
}

var defaultClient = sync.OnceValue(func() *http.Client { return New(Options{}) })

// Default returns a client with the default options, shared by every
// caller that does not bring its own, so that they share one pool of
// connections.
func Default() *http.Client { return defaultClient() }

// NewTransport returns the round tripper New's clients use: an
// http.Transport with o's timeouts and pools, behind a wrapper that sets
// the User-Agent, watches response bodies for stalls, sends a GET
// answered 408 again, and sends plain http requests to a server known to
// speak h2c over HTTP/2 (a second http.Transport of the same settings,
// whose connections speak only that). Over TLS it offers HTTP/2 and
// HTTP/1.1 (ALPN): on HTTP/2 a host's requests are streams that share a
// connection, so that MaxConnsPerHost counts connections, not requests in
// flight (transfer counts those itself). It also serves s3://BUCKET/KEY
// GET and HEAD requests, signed for the s3.Config of their context
// (internal/s3x).
func NewTransport(o Options) http.RoundTripper {
	o = o.withDefaults()
	dialer := &net.Dialer{Timeout: o.ConnectTimeout, KeepAlive: 30 * time.Second, Control: o.DialControl}
	var protos http.Protocols
	protos.SetHTTP1(true)
	protos.SetHTTP2(!o.HTTP1)
	t := &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           dialer.DialContext,
		TLSClientConfig:       &tls.Config{RootCAs: o.RootCAs},
		TLSHandshakeTimeout:   o.TLSHandshakeTimeout,
		ResponseHeaderTimeout: o.ResponseHeaderTimeout,
		MaxIdleConns:          o.MaxIdleConns,
		MaxIdleConnsPerHost:   o.MaxIdleConnsPerHost,
		MaxConnsPerHost:       o.MaxConnsPerHost,
		IdleConnTimeout:       o.IdleConnTimeout,
		ReadBufferSize:        o.ReadBufferSize,
		DisableCompression:    o.DisableCompression,
		ExpectContinueTimeout: time.Second,
		Protocols:             &protos,
		// An HTTP/2 connection that receives nothing for a while is
		// pinged, and closed when the ping goes unanswered: a
		// connection a NAT or a firewall dropped in silence is not
		// given the next requests.
		HTTP2: &http.HTTP2Config{SendPingTimeout: 30 * time.Second, PingTimeout: 15 * time.Second},
	}
	if o.Proxy != nil {
		t.Proxy = o.Proxy
	}
	if o.DialControl != nil {
		// No proxy then: the check must see the address really
		// connected to.
		t.Proxy = nil
	}
	tr := &transport{base: t, stall: o.StallTimeout, ua: version.UserAgent(), minSpeed: o.MinSpeed, window: o.MinSpeedWindow, retry: o.Retry.withDefaults()}
	if o.H2C != H2CNever && !o.HTTP1 {
		tr.h2c = newH2C(t, o.H2C)
	}
	// s3:// URLs are signed and sent through the same transport; the
	// SDK's credential look-ups go through it too.
	t.RegisterProtocol(s3.Scheme, s3x.NewRoundTripper(t, &http.Client{Transport: tr, CheckRedirect: checkRedirect(o.MaxRedirects)}))
	return tr
}

// checkRedirect follows at most max redirects, and only to http or https.
func checkRedirect(max int) func(*http.Request, []*http.Request) error {
	return func(req *http.Request, via []*http.Request) error {
		from := via[len(via)-1].URL
		if err := CheckRedirect(from, req.URL); err != nil {
			return err
		}
		if len(via) > max {
			return fmt.Errorf("%w: more than %d, the last from %s to %s", ErrRedirects, max, from.Redacted(), req.URL.Redacted())
		}
		return nil
	}
}

// CheckRedirect refuses a redirect from one URL to another that is not
// http or https, for callers that follow redirects themselves.
func CheckRedirect(from, to *url.URL) error {
	if to.Scheme != "http" && to.Scheme != "https" {
		return fmt.Errorf("%w: from %s to %s", ErrScheme, from.Redacted(), to.Redacted())
	}
	return nil
}

// Errors, each wrapped with the URLs concerned.
var (
	ErrScheme    = errors.New("redirect to a scheme other than http or https")
	ErrRedirects = errors.New("too many redirects")
	ErrStalled   = errors.New("stalled")
	ErrTooLarge  = errors.New("document larger than the limit")
)

// StatusError is a response whose status is not a success.
type StatusError struct {
	URL    string // the URL asked for
	Final  string // the URL that answered, after redirects
	Code   int
	Status string // "404 Not Found"
	// RetryAfter is the wait a 429 or 503 asked for in its Retry-After
	// field; 0 without one.
	RetryAfter time.Duration
}

func (e *StatusError) Error() string {
	if e.Final != "" && e.Final != e.URL {
		return fmt.Sprintf("%s (redirected to %s): HTTP %s", e.URL, e.Final, e.Status)
	}
	return fmt.Sprintf("%s: HTTP %s", e.URL, e.Status)
}

// StallError is a response body that delivered no byte for After.
type StallError struct {
	URL   string
	After time.Duration
}

func (e *StallError) Error() string {
	return fmt.Sprintf("%s: %v: no data for %s", e.URL, ErrStalled, e.After)
}

func (e *StallError) Unwrap() error { return ErrStalled }

// Timeout says the error is a timeout, as net.Error does.
func (e *StallError) Timeout() bool { return true }
