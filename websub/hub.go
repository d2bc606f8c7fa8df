// Package websub is a WebSub hub (W3C Recommendation of 23 January 2018)
// that also takes the notifications of the ResourceSync Framework and
// Change Notification specifications (§4 of each): an http.Handler that
//
//   - answers subscription and unsubscription requests (a form POST of
//     hub.mode, hub.topic, hub.callback, hub.lease_seconds, hub.secret)
//     with 202 Accepted, or 400 and the reason, and then verifies the
//     subscriber's intent with a GET of its callback carrying
//     hub.challenge, which the subscriber must answer with a 2xx whose
//     body is exactly the challenge (a redirect is no answer: callbacks
//     are never redirected), and applies it under one lock with the
//     check of MaxSubscriptions;
//   - grants leases (10 days unless asked otherwise, bounded by a minimum
//     and a maximum), renewed by subscribing again, and stops delivering
//     to a subscription whose lease has run out;
//   - takes new content for a topic either as a ResourceSync Source sends
//     it (a POST of the notification itself to the hub URL, its topic in
//     a Link rel="self"; a publisher AllowPublisher admits) or as a WebSub
//     publisher asks (hub.mode=publish with hub.topic or hub.url: the hub
//     fetches the topic; one AllowPublisher does not admit may ask only
//     for the hub's own topics, those on its URL's host, and what is
//     fetched for it is delivered, never kept);
//   - distributes it to every subscriber of the topic: a POST of the body
//     with the topic's Content-Type, Link rel="hub" and rel="self" (and the
//     Source's other links, rel="resourcesync"), signed with
//     X-Hub-Signature: sha256=HMAC when the subscriber gave a hub.secret,
//     retried with exponential backoff, bounded in attempts and in time,
//     in order per subscriber, never holding up the publisher or the
//     other subscribers: a pool of Deliveries workers takes the
//     subscribers with content waiting in turn, one delivery each, each
//     within Timeout, and those whose last try failed share at most a
//     quarter of it;
//   - answers a GET of a topic URL with the latest content it received for
//     it (and with an empty 200 for a topic under the hub's URL that has
//     had none yet), with the Link headers a subscriber discovers the hub
//     by;
//   - keeps its subscriptions (their secrets byte for byte) and the
//     latest content of each topic, at most MaxKept bytes of it, in a
//     state file, an append log of small JSON records (each change a line,
//     synced), compacted when it holds twice what it must, so that they
//     survive a restart.
//
// The hub never prints: what happens is told to Options.Events.
package websub

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sync/semaphore"

	"github.com/rsdump/rsdump/finding"
	"github.com/rsdump/rsdump/internal/httpc"
	"github.com/rsdump/rsdump/internal/opt"
)

// Defaults of Options.
const (
	DefaultLease            = 10 * 24 * time.Hour
	DefaultMinLease         = 5 * time.Minute     // the ResourceSync specs' recommended lower bound (300 s)
	DefaultMaxLease         = 31 * 24 * time.Hour // and upper bound (2678400 s)
	DefaultAttempts         = 6
	DefaultRetryWait        = 2 * time.Second
	DefaultRetryTime        = 10 * time.Minute
	DefaultTimeout          = 10 * time.Second
	DefaultMaxContent       = 4 << 20
	DefaultConcurrency      = 16
	DefaultDeliveries       = 256
	DefaultMaxSubscriptions = 100_000
	DefaultMaxKept          = 64 << 20
	// MaxSecret is the longest hub.secret taken, in bytes: WebSub says a
	// secret MUST be less than 200 bytes.
	MaxSecret = 199
)

// Limits on what the hub reads from others.
const (
	maxForm        = 64 << 10 // a subscription or publish request
	maxReply       = 1 << 10  // a callback's answer to the challenge
	maxQueue       = 64       // contents waiting for one subscriber
	discardOnReply = 4 << 10  // read of a delivery's answer, to reuse the connection
)

// maxPending bounds the verifications and fetches waiting: past it,
// requests are answered 503. A variable for tests.
var maxPending int64 = 1024

// maxQueued bounds the bytes of content waiting for delivery, each
// content counted once however many subscribers wait for it: past it,
// new content is dropped for the subscribers it would queue for. A
// variable for tests.
var maxQueued int64 = 256 << 20

// Options configure a Hub. Only URL is required.
type Options struct {
	// URL is the hub's public URL, the one subscribers and publishers
	// POST to and that deliveries name in Link rel="hub". Requests reach
	// the hub at its path; topic URLs the hub serves are on its host.
	URL string
	// StateFile keeps the subscriptions and the latest content of each
	// topic across restarts; empty keeps them in memory only.
	StateFile string
	// Client sends the verification requests, the deliveries and the
	// fetches of topics. Its redirects are followed only to http and
	// https, whatever its own CheckRedirect allows. Default: an
	// internal/httpc client.
	Client *http.Client
	// Now is the clock of leases. Default: time.Now.
	Now func() time.Time
	// Lease is granted when a subscriber asks for none; MinLease and
	// MaxLease bound what it asks for.
	Lease, MinLease, MaxLease time.Duration
	// Attempts bounds the tries of one delivery to one subscriber; the
	// first retry waits RetryWait, each later one twice the one before,
	// and no retry starts once RetryTime has passed since the first try.
	Attempts  int
	RetryWait time.Duration
	RetryTime time.Duration
	// Timeout bounds each request the hub sends, answer included: a
	// verification, a fetch, each try of a delivery.
	Timeout time.Duration
	// MaxContent bounds a notification's body, posted or fetched.
	MaxContent int64
	// Concurrency bounds the verifications and fetches the hub sends at
	// once.
	Concurrency int
	// Deliveries bounds the deliveries in flight at once: the workers
	// of the pool that takes subscribers in turn. Subscribers whose last
	// try failed hold at most a quarter of them, so that those that never
	// answer cannot keep the others waiting. Default DefaultDeliveries.
	Deliveries int
	// MaxKept bounds the bytes of the topics' latest content the hub
	// keeps (and answers GETs of topics with): past it, the topics
	// updated longest ago are let go. Default DefaultMaxKept.
	MaxKept int64
	// MaxSubscriptions bounds the subscriptions the hub keeps: past it, a
	// new one is denied (its renewals never are). Default
	// DefaultMaxSubscriptions.
	MaxSubscriptions int
	// PublicOnly refuses to connect to a loopback, private, link-local,
	// multicast or unspecified address, whatever name led there (checked
	// as the connection is made, so a name that resolves again cannot
	// slip past): a hub open to the Internet must not be made to send
	// requests into its own network by the callbacks and topics
	// subscribers name. It applies to the default Client only.
	PublicOnly bool
	// AllowTopic says whether the hub takes subscriptions and content for
	// a topic (an absolute http(s) URL); an error refuses it with 403 and
	// the error's text. Default: any topic.
	AllowTopic func(topic string) error
	// AllowPublisher says whether a request is a publisher's: it may
	// post a notification's content directly (the ResourceSync way,
	// which the hub cannot check against the topic; others get 403), and
	// its hub.mode=publish may name any topic AllowTopic takes, the
	// content fetched kept as the topic's latest. Anyone else's
	// hub.mode=publish may name only the hub's own topics (on the host of
	// URL), and what the hub fetches for it is delivered, never kept.
	// Default: only requests from a loopback address.
	AllowPublisher func(r *http.Request) error
	// Events, when set, is told what happens, from the hub's goroutines:
	// an Event each time (the library's one contract, finding.Event).
	Events func(finding.Event)
}

// Hub is a WebSub hub; see the package documentation. Its methods are
// safe for concurrent use.
type Hub struct {
	opts     Options
	url      *url.URL
	client   *http.Client // fetches of topics
	cbClient *http.Client // requests to subscribers' callbacks: never redirected

	mu          sync.Mutex
	subs        map[key]*sub
	topics      map[string]*content // the latest content of each topic
	kept        int64               // bytes of topics' content
	seq         uint64              // of subscription requests, so that the latest verified wins
	applied     map[key]uint64
	pool        pool  // the delivery workers and the subscribers waiting for them
	queuedBytes int64 // of the content in subscribers' queues, each counted once
	log         stateLog

	saveMu  sync.Mutex
	sem     *semaphore.Weighted
	pending atomic.Int64 // verifications and fetches asked for, not yet done
	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	closeMu sync.Mutex // orders spawn and Close, so that Close waits for all
	closed  bool
}

// key is what identifies a subscription: its topic and callback.
type key struct{ topic, callback string }

type sub struct {
	key
	secret  string
	lease   time.Duration
	expires time.Time
	queue   []*content // queue[0] is being delivered when busy
	busy    bool       // waiting for a worker, in one, or waiting to retry
	attempt int        // tries of queue[0] so far
	first   time.Time  // of queue[0]'s first try
	failing bool       // its last try failed: it takes the slow lane
}

// content is one notification for a topic.
type content struct {
	topic  string
	ctype  string
	links  []string // Link field values passed on to subscribers
	body   []byte
	time   time.Time
	queued int // the queues holding it
}

// New returns a hub with opts, with the subscriptions of opts.StateFile
// when it exists.
func New(opts Options) (*Hub, error) {
	u, err := httpURL("hub URL", opts.URL)
	if err != nil {
		return nil, err
	}
	h := &Hub{opts: withDefaults(opts), url: u, subs: map[key]*sub{}, topics: map[string]*content{}, applied: map[key]uint64{}}
	h.opts.URL = u.String()
	h.client = safeClient(opts.Client, opts.PublicOnly)
	h.cbClient = noRedirects(h.client)
	h.sem = semaphore.NewWeighted(int64(h.opts.Concurrency))
	if err := h.load(); err != nil {
		return nil, err
	}
	h.ctx, h.cancel = context.WithCancel(context.Background())
	return h, nil
}

func withDefaults(o Options) Options {
	opt.Default(&o.Lease, DefaultLease)
	opt.Default(&o.MinLease, DefaultMinLease)
	opt.Default(&o.MaxLease, DefaultMaxLease)
	opt.Default(&o.RetryWait, DefaultRetryWait)
	opt.Default(&o.RetryTime, DefaultRetryTime)
	opt.Default(&o.Timeout, DefaultTimeout)
	o.MaxLease = max(o.MaxLease, o.MinLease)
	o.Lease = min(max(o.Lease, o.MinLease), o.MaxLease)
	opt.Default(&o.Attempts, DefaultAttempts)
	opt.Default(&o.MaxContent, DefaultMaxContent)
	opt.Default(&o.Concurrency, DefaultConcurrency)
	opt.Default(&o.Deliveries, DefaultDeliveries)
	opt.Default(&o.MaxKept, DefaultMaxKept)
	opt.Default(&o.MaxSubscriptions, DefaultMaxSubscriptions)
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.AllowPublisher == nil {
		o.AllowPublisher = fromLoopback
	}
	return o
}

// safeClient is c, or a default client, that follows redirects only to
// http and https: a subscriber names the URLs the hub fetches.
func safeClient(c *http.Client, publicOnly bool) *http.Client {
	if c == nil {
		o := httpc.Options{ConnectTimeout: 10 * time.Second, ResponseHeaderTimeout: DefaultTimeout, StallTimeout: DefaultTimeout}
		if publicOnly {
			o.DialControl = publicAddress
		}
		return httpc.New(o)
	}
	cc := *c
	next := c.CheckRedirect
	cc.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if err := httpc.CheckRedirect(via[len(via)-1].URL, req.URL); err != nil {
			return err
		}
		if next != nil {
			return next(req, via)
		}
		if len(via) >= httpc.DefaultMaxRedirects {
			return httpc.ErrRedirects
		}
		return nil
	}
	return &cc
}

// noRedirects is c for the requests to a subscriber's callback: a
// redirect is its answer, never followed, so that a callback cannot
// send the hub's verification or content elsewhere (a verification
// answered with one fails: it is not a 2xx).
func noRedirects(c *http.Client) *http.Client {
	cc := *c
	cc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &cc
}

// ErrPrivateAddress is a connection PublicOnly refused.
var ErrPrivateAddress = errors.New("not a public address: refused")

// publicAddress is the dial check of PublicOnly.
func publicAddress(network, address string, _ syscall.RawConn) error {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return err
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return err
	}
	if !isPublic(ip) {
		return fmt.Errorf("%s: %w", ip, ErrPrivateAddress)
	}
	return nil
}

func isPublic(ip netip.Addr) bool {
	ip = ip.Unmap()
	return !(ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() ||
		ip.IsMulticast() || ip.IsUnspecified() || ip.IsInterfaceLocalMulticast())
}

// PublicHost says whether a URL's host (a name, or an address with or
// without a port) may be reached from the Internet: any name but
// localhost, and a public address. A hub whose own URL is public should
// be PublicOnly.
func PublicHost(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	if ip, err := netip.ParseAddr(host); err == nil {
		return isPublic(ip)
	}
	return host != "localhost" && !strings.HasSuffix(host, ".localhost")
}

// ownTopic says whether topic is one of the hub's own: on the scheme
// and host of its URL.
func (h *Hub) ownTopic(topic string) bool {
	u, err := url.Parse(topic)
	return err == nil && u.Scheme == h.url.Scheme && u.Host == h.url.Host
}

// fromLoopback is the default AllowPublisher.
func fromLoopback(r *http.Request) error {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if ip := net.ParseIP(host); err == nil && ip != nil && ip.IsLoopback() {
		return nil
	}
	return errors.New("only a publisher on this machine may post notifications to this hub; others send hub.mode=publish")
}

// Close stops the hub: verifications and deliveries in flight are
// cancelled and waited for, and later requests are answered 503. The
// subscriptions stay in the state file.
func (h *Hub) Close() error {
	h.closeMu.Lock()
	h.closed = true
	h.closeMu.Unlock()
	h.cancel()
	h.wg.Wait()
	return nil
}

// URL is the hub's public URL.
func (h *Hub) URL() string { return h.opts.URL }

// Subscription is one verified subscription.
type Subscription struct {
	Topic, Callback string
	Lease           time.Duration // granted at the last (re)subscription
	Expires         time.Time
	Signed          bool // the subscriber gave a secret
}

// Subscriptions returns the subscriptions whose lease has not run out.
func (h *Hub) Subscriptions() []Subscription {
	now := h.opts.Now()
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []Subscription
	for _, s := range h.subs {
		if now.Before(s.expires) {
			out = append(out, Subscription{Topic: s.topic, Callback: s.callback, Lease: s.lease, Expires: s.expires, Signed: s.secret != ""})
		}
	}
	return out
}

func (h *Hub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h.ctx.Err() != nil {
		http.Error(w, "the hub is shutting down", http.StatusServiceUnavailable)
		return
	}
	if r.URL.Path == h.url.Path {
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			http.Error(w, "a WebSub hub: POST hub.mode=subscribe, unsubscribe or publish, or a notification", http.StatusMethodNotAllowed)
			return
		}
		h.post(w, r)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	h.serveTopic(w, r)
}

func (h *Hub) emit(e Event) { finding.Send(h.opts.Events, e) }

// httpURL parses s, the value of the parameter name, as an absolute
// http(s) URL without a fragment.
func httpURL(name, s string) (*url.URL, error) {
	if s == "" {
		return nil, fmt.Errorf("%s is missing", name)
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Fragment != "" {
		return nil, fmt.Errorf("%s %q is not an absolute http or https URL without a fragment", name, s)
	}
	return u, nil
}

// spawn runs f on a goroutine Close waits for; after Close, it does not.
func (h *Hub) spawn(f func()) {
	h.closeMu.Lock()
	defer h.closeMu.Unlock()
	if h.closed {
		return
	}
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		f()
	}()
}

// later runs f, work a request asked for, on a goroutine; it returns
// false, and runs nothing, when too much such work is waiting already.
func (h *Hub) later(f func()) bool {
	if h.pending.Add(1) > maxPending {
		h.pending.Add(-1)
		return false
	}
	h.spawn(func() {
		defer h.pending.Add(-1)
		f()
	})
	return true
}

func busy(w http.ResponseWriter) {
	w.Header().Set("Retry-After", "60")
	http.Error(w, "the hub has too many requests in progress; try again later", http.StatusServiceUnavailable)
}

// acquire takes one of the Concurrency slots for an outgoing request.
func (h *Hub) acquire(ctx context.Context) error { return h.sem.Acquire(ctx, 1) }

func (h *Hub) release() { h.sem.Release(1) }
