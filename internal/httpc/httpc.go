// Package httpc is rsdump's one way to build an HTTP client. Every client
// it builds sets a User-Agent naming rsdump and its version, takes proxies
// from the environment, bounds the time to connect, to shake hands and to
// wait for response headers, fails a response body that delivers no byte
// for the stall timeout, and follows at most a few redirects, only to http
// and https. Open fetches a document with a size cap, and holds its body
// to a minimum speed; DoRetry does it again after a failure that passes,
// a bounded number of times. Every error names the URL.
package httpc

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"runtime"
	"sync"
	"syscall"
	"time"

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

	MaxRedirects int // redirects followed [10]

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
	def := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&o.ConnectTimeout, DefaultConnectTimeout)
	def(&o.TLSHandshakeTimeout, DefaultTLSHandshakeTimeout)
	def(&o.ResponseHeaderTimeout, DefaultHeaderTimeout)
	def(&o.StallTimeout, DefaultStallTimeout)
	def(&o.MinSpeedWindow, DefaultMinSpeedWindow)
	def(&o.IdleConnTimeout, 90*time.Second)
	if o.MaxIdleConns <= 0 {
		o.MaxIdleConns = 100
	}
	if o.MaxIdleConnsPerHost <= 0 {
		o.MaxIdleConnsPerHost = max(4, runtime.GOMAXPROCS(0)) // verify reads GOMAXPROCS packages at once
	}
	if o.MaxRedirects <= 0 {
		o.MaxRedirects = DefaultMaxRedirects
	}
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
// the User-Agent and watches response bodies for stalls. It speaks
// HTTP/1.1 only (its own dialer turns off net/http's automatic HTTP/2), so
// that connections per host are what transfer's budget counts. It also
// serves s3://BUCKET/KEY GET and HEAD requests, signed for the s3.Config
// of their context (internal/s3x).
func NewTransport(o Options) http.RoundTripper {
	o = o.withDefaults()
	t := &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: o.ConnectTimeout, KeepAlive: 30 * time.Second}).DialContext,
		TLSHandshakeTimeout:   o.TLSHandshakeTimeout,
		ResponseHeaderTimeout: o.ResponseHeaderTimeout,
		MaxIdleConns:          o.MaxIdleConns,
		MaxIdleConnsPerHost:   o.MaxIdleConnsPerHost,
		MaxConnsPerHost:       o.MaxConnsPerHost,
		IdleConnTimeout:       o.IdleConnTimeout,
		ReadBufferSize:        o.ReadBufferSize,
		DisableCompression:    o.DisableCompression,
		ExpectContinueTimeout: time.Second,
	}
	if o.DialControl != nil {
		t.Proxy = nil
		t.DialContext = (&net.Dialer{Timeout: o.ConnectTimeout, KeepAlive: 30 * time.Second, Control: o.DialControl}).DialContext
	}
	tr := &transport{base: t, stall: o.StallTimeout, ua: version.UserAgent(), minSpeed: o.MinSpeed, window: o.MinSpeedWindow, retry: o.Retry.withDefaults()}
	if o.DisableCompression && o.MaxConnsPerHost <= 0 {
		// Without compression to negotiate nor connections to count,
		// documents and resources are sent lean (see lean).
		tr.lean = &lean{base: t}
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
