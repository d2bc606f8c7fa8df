package websub

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rsdump/rsdump/internal/httpc"
	"github.com/rsdump/rsdump/metalink/httpheader"
)

// A Subscriber is the subscriber's side of WebSub (§5 and §7 of the
// Recommendation): an http.Handler to serve at its callback URL, and the
// requests that subscribe it to topics and unsubscribe it. Each
// subscription has a callback of its own (CallbackURL and a random path)
// and a random secret, so that content is taken only when it comes for
// that subscription, signed with that secret: anything else is ignored
// (and answered 2xx, as WebSub allows, so that a forger learns nothing);
// a path that is no subscription's callback is answered 404.
// Its methods are safe for concurrent use.
type Subscriber struct {
	// CallbackURL is the URL the Handler is reached at, from the hub; each
	// subscription's callback is under it.
	CallbackURL string
	// Client sends the subscription requests. Nil is httpc.Default().
	Client *http.Client
	// Notify is called with each content that checks, one at a time, from
	// the handler's goroutine: it must not block for long.
	Notify func(Content)
	// Ignored is called with each request to a callback that is ignored,
	// and why (a missing or bad signature, an unknown callback).
	Ignored func(topic string, err error)
	// MaxContent bounds a content's body; default DefaultMaxContent.
	MaxContent int64

	mu   sync.Mutex
	subs map[string]*subscription // by callback path
}

// Content is what a hub delivered for a topic, its signature checked.
type Content struct {
	Topic       string
	ContentType string
	Links       []httpheader.Link
	Body        []byte
}

// subscription is one of the Subscriber's: a Subscription (the same as
// the hub's view of it) and the hub it is at.
type subscription struct {
	Subscription
	hub    string
	secret string
	intent string            // the mode a verification may confirm: subscribe or unsubscribe
	done   chan verification // told of the hub's verification or denial
	active bool              // verified as subscribed
}

type verification struct {
	lease time.Duration
	err   error
}

// Errors of subscription.
var (
	ErrDenied  = errors.New("the hub denied the subscription")
	ErrTimeout = errors.New("the hub did not verify the request in time")
	// ErrBadSignature is content without a valid X-Hub-Signature.
	ErrBadSignature = errors.New("no valid X-Hub-Signature: ignored")
	ErrUnknown      = errors.New("not a callback of an active subscription: ignored")
)

// Subscribe asks hub for topic (hub.mode=subscribe), with a lease of
// lease (0: the hub's default), and waits, at most wait, for the hub to
// verify the intent. It returns the subscription with the lease granted
// and when it expires.
// Subscribing again to the same hub and topic renews the subscription,
// with the same callback and secret.
func (s *Subscriber) Subscribe(ctx context.Context, hub, topic string, lease, wait time.Duration) (Subscription, error) {
	sub := s.prepare(hub, topic, "subscribe")
	form := url.Values{"hub.mode": {"subscribe"}, "hub.topic": {topic}, "hub.callback": {sub.Callback}, "hub.secret": {sub.secret}}
	if lease > 0 {
		form.Set("hub.lease_seconds", strconv.FormatInt(int64(lease/time.Second), 10))
	}
	v, err := s.request(ctx, hub, form, sub, wait)
	if err != nil {
		return Subscription{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sub.Lease, sub.Expires, sub.active = v.lease, time.Now().Add(v.lease), true
	return sub.Subscription, nil
}

// Unsubscribe asks hub to end the subscription to topic and waits, at
// most wait, for its verification. Content for it is ignored from the
// moment it is asked for.
func (s *Subscriber) Unsubscribe(ctx context.Context, hub, topic string, wait time.Duration) error {
	sub := s.prepare(hub, topic, "unsubscribe")
	s.mu.Lock()
	sub.active = false
	s.mu.Unlock()
	form := url.Values{"hub.mode": {"unsubscribe"}, "hub.topic": {topic}, "hub.callback": {sub.Callback}}
	_, err := s.request(ctx, hub, form, sub, wait)
	return err
}

// prepare finds or makes the subscription to topic at hub, ready for a
// verification of intent.
func (s *Subscriber) prepare(hub, topic, intent string) *subscription {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.subs == nil {
		s.subs = map[string]*subscription{}
	}
	for _, sub := range s.subs {
		if sub.hub == hub && sub.Topic == topic {
			sub.intent, sub.done = intent, make(chan verification, 1)
			return sub
		}
	}
	path := randomHex(16)
	sub := &subscription{Subscription: Subscription{Topic: topic, Signed: true,
		Callback: strings.TrimSuffix(s.CallbackURL, "/") + "/" + path},
		hub: hub, secret: randomHex(32), intent: intent, done: make(chan verification, 1)}
	s.subs[path] = sub
	return sub
}

// request posts form to hub and waits for the verification.
func (s *Subscriber) request(ctx context.Context, hub string, form url.Values, sub *subscription, wait time.Duration) (verification, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, hub, strings.NewReader(form.Encode()))
	if err != nil {
		return verification{}, fmt.Errorf("hub %s: %w", hub, err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	s.mu.Lock()
	done := sub.done
	s.mu.Unlock()
	_, body, err := httpc.DoRetry(s.Client, req, maxReply)
	if err != nil {
		return verification{}, fmt.Errorf("%s of %s at hub %s: %w", form.Get("hub.mode"), sub.Topic, hub, err)
	}
	io.Copy(io.Discard, body)
	body.Close()
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case v := <-done:
		if v.err != nil {
			return v, fmt.Errorf("%s of %s at hub %s: %w", form.Get("hub.mode"), sub.Topic, hub, v.err)
		}
		return v, nil
	case <-t.C:
		return verification{}, fmt.Errorf("%s of %s at hub %s: %w (%s)", form.Get("hub.mode"), sub.Topic, hub, ErrTimeout, wait)
	case <-ctx.Done():
		return verification{}, ctx.Err()
	}
}

// ServeHTTP answers the hub at a subscription's callback: a GET verifies
// an intent or tells of a denial, a POST delivers content.
func (s *Subscriber) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	path := r.URL.Path[strings.LastIndexByte(r.URL.Path, '/')+1:]
	s.mu.Lock()
	sub := s.subs[path]
	s.mu.Unlock()
	switch {
	case sub == nil:
		http.NotFound(w, r)
	case r.Method == http.MethodGet:
		s.verify(w, r.URL.Query(), sub)
	case r.Method == http.MethodPost:
		s.content(w, r, sub)
	default:
		w.Header().Set("Allow", "GET, POST")
		http.Error(w, "GET or POST", http.StatusMethodNotAllowed)
	}
}

// verify answers a verification of intent: the challenge is echoed only
// for the topic and the mode asked for last.
func (s *Subscriber) verify(w http.ResponseWriter, q url.Values, sub *subscription) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if q.Get("hub.topic") != sub.Topic {
		http.NotFound(w, nil)
		return
	}
	mode := q.Get("hub.mode")
	if mode == "denied" {
		sub.active = false
		tell(sub.done, verification{err: fmt.Errorf("%w: %s", ErrDenied, q.Get("hub.reason"))})
		w.WriteHeader(http.StatusOK)
		return
	}
	challenge := q.Get("hub.challenge")
	if mode != sub.intent || challenge == "" {
		http.NotFound(w, nil)
		return
	}
	lease, _ := strconv.ParseInt(q.Get("hub.lease_seconds"), 10, 64)
	tell(sub.done, verification{lease: time.Duration(lease) * time.Second})
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	io.WriteString(w, challenge)
}

// tell sends v without blocking: the first verification of a request
// counts.
func tell(c chan verification, v verification) {
	select {
	case c <- v:
	default:
	}
}

// content takes a delivery: signed with the subscription's secret, it
// goes to Notify; else it is ignored.
func (s *Subscriber) content(w http.ResponseWriter, r *http.Request, sub *subscription) {
	max := s.MaxContent
	if max <= 0 {
		max = DefaultMaxContent
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, max))
	if err != nil {
		http.Error(w, err.Error(), http.StatusRequestEntityTooLarge)
		return
	}
	s.mu.Lock()
	active, secret := sub.active, sub.secret
	s.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
	switch {
	case !active:
		s.ignored(sub.Topic, ErrUnknown)
	case !CheckSignature(secret, r.Header.Get("X-Hub-Signature"), body):
		s.ignored(sub.Topic, ErrBadSignature)
	case s.Notify != nil:
		s.Notify(Content{Topic: sub.Topic, ContentType: r.Header.Get("Content-Type"),
			Links: httpheader.ParseLinks(r.Header.Values("Link"), sub.Topic), Body: body})
	}
}

func (s *Subscriber) ignored(topic string, err error) {
	if s.Ignored != nil {
		s.Ignored(topic, err)
	}
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// Discover finds the hub and topic of the resource at loc the way WebSub
// §4 says: the Link rel="hub" and rel="self" of its response to a GET.
func Discover(ctx context.Context, c *http.Client, loc string) (hub, topic string, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, loc, nil)
	if err != nil {
		return "", "", err
	}
	resp, body, err := httpc.DoRetry(c, req, 0)
	if err != nil {
		return "", "", err
	}
	body.Close()
	for _, l := range httpheader.ParseLinks(resp.Header.Values("Link"), loc) {
		switch {
		case l.Has("hub") && hub == "":
			hub = l.URL
		case l.Has("self") && topic == "":
			topic = l.URL
		}
	}
	if hub == "" {
		return "", "", fmt.Errorf("%s: no Link rel=\"hub\"", loc)
	}
	if topic == "" {
		topic = loc
	}
	return hub, topic, nil
}
