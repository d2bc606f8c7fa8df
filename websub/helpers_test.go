package websub

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rsdump/rsdump/finding"
)

// wait bounds every wait of these tests.
const wait = 5 * time.Second

// fixture is a hub served on loopback, with its events on a channel.
type fixture struct {
	t      *testing.T
	hub    *Hub
	srv    *httptest.Server
	url    string // the hub's URL
	events chan Event
	opts   Options
}

// newFixture serves a hub at /hub of a loopback server; opts may set
// anything but URL and Event.
func newFixture(t *testing.T, opts Options) *fixture {
	t.Helper()
	f := &fixture{t: t, events: make(chan Event, 1000)}
	var mu sync.RWMutex
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.RLock()
		h := f.hub
		mu.RUnlock()
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(f.srv.Close)
	f.url = f.srv.URL + "/hub"
	opts.URL = f.url
	opts.Events = func(e finding.Event) {
		if ev, ok := e.(Event); ok {
			f.events <- ev
		}
	}
	if opts.RetryWait == 0 {
		opts.RetryWait = 10 * time.Millisecond
	}
	if opts.Timeout == 0 {
		opts.Timeout = 2 * time.Second
	}
	f.opts = opts
	h, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	f.hub = h
	mu.Unlock()
	t.Cleanup(func() { h.Close() })
	return f
}

// restart closes the hub and starts another on the same state file and
// URL, as a restarted process would.
func (f *fixture) restart() {
	f.t.Helper()
	f.hub.Close()
	h, err := New(f.opts)
	if err != nil {
		f.t.Fatal(err)
	}
	f.hub = h
	f.t.Cleanup(func() { h.Close() })
}

// form POSTs a form to the hub and returns the status and body.
func (f *fixture) form(v url.Values) (int, string) {
	f.t.Helper()
	resp, err := http.PostForm(f.url, v)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// subscribe sends a subscription request that must be accepted, then
// waits for the event that ends its verification.
func (f *fixture) subscribe(v url.Values) Event {
	f.t.Helper()
	if v.Get("hub.mode") == "" {
		v.Set("hub.mode", "subscribe")
	}
	if code, body := f.form(v); code != http.StatusAccepted {
		f.t.Fatalf("%s: HTTP %d %s, want 202", v.Get("hub.mode"), code, body)
	}
	return f.next(Subscribed, Unsubscribed, Refused)
}

// next waits for the next event of one of kinds, skipping others.
func (f *fixture) next(kinds ...EventKind) Event {
	f.t.Helper()
	deadline := time.After(wait)
	for {
		select {
		case e := <-f.events:
			for _, k := range kinds {
				if e.Kind == k {
					return e
				}
			}
		case <-deadline:
			f.t.Fatalf("no %v event within %s", kinds, wait)
		}
	}
}

// notify posts a notification directly, the ResourceSync way.
func (f *fixture) notify(topic, ctype, body string, links ...string) (int, string) {
	f.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, f.url, strings.NewReader(body))
	req.Header.Set("Content-Type", ctype)
	req.Header.Add("Link", "<"+topic+">; rel=\"self\"")
	req.Header.Add("Link", "<"+f.url+">; rel=\"hub\"")
	for _, l := range links {
		req.Header.Add("Link", l)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// subscriber is a scripted WebSub subscriber: it records the hub's
// verification requests and deliveries.
type subscriber struct {
	srv *httptest.Server
	// answer, when set, answers a verification instead of the echo.
	answer func(w http.ResponseWriter, q url.Values)
	// status, when set, is the answer to a delivery (after recording it).
	status func(n int) int

	mu       sync.Mutex
	verifies []url.Values
	rawQuery []string
	got      []delivery
	arrived  chan delivery
}

type delivery struct {
	header http.Header
	body   string
	query  string
}

func newSubscriber(t *testing.T) *subscriber {
	s := &subscriber{arrived: make(chan delivery, 100)}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *subscriber) serve(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodGet:
		q := r.URL.Query()
		s.mu.Lock()
		s.verifies = append(s.verifies, q)
		s.rawQuery = append(s.rawQuery, r.URL.RawQuery)
		answer := s.answer
		s.mu.Unlock()
		if answer != nil {
			answer(w, q)
			return
		}
		io.WriteString(w, q.Get("hub.challenge"))
	case http.MethodPost:
		b, _ := io.ReadAll(r.Body)
		d := delivery{header: r.Header.Clone(), body: string(b), query: r.URL.RawQuery}
		s.mu.Lock()
		s.got = append(s.got, d)
		n := len(s.got)
		s.mu.Unlock()
		if s.status != nil {
			if code := s.status(n); code != 0 && code != http.StatusOK {
				w.WriteHeader(code)
				return
			}
		}
		s.arrived <- d
	}
}

// callback is the subscriber's callback URL, with path p.
func (s *subscriber) callback(p string) string { return s.srv.URL + p }

// delivery waits for the next successful delivery.
func (s *subscriber) delivery(t *testing.T) delivery {
	t.Helper()
	select {
	case d := <-s.arrived:
		return d
	case <-time.After(wait):
		t.Fatalf("no delivery within %s", wait)
		return delivery{}
	}
}

func (s *subscriber) lastVerify() url.Values {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.verifies[len(s.verifies)-1]
}

func (s *subscriber) posts() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.got)
}

// publisher serves a topic at /topic, as a WebSub publisher does; set
// changes what it serves.
type publisher struct {
	mu          sync.Mutex
	ctype, body string
	url         string
}

func newPublisher(t *testing.T, ctype, body string) *publisher {
	p := &publisher{ctype: ctype, body: body}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		defer p.mu.Unlock()
		w.Header().Set("Content-Type", p.ctype)
		io.WriteString(w, p.body)
	}))
	t.Cleanup(srv.Close)
	p.url = srv.URL + "/topic"
	return p
}

func (p *publisher) set(body string) {
	p.mu.Lock()
	p.body = body
	p.mu.Unlock()
}

// links returns the rel → URL of a Link header.
func links(h http.Header) map[string]string {
	out := map[string]string{}
	for _, v := range h.Values("Link") {
		for _, part := range strings.Split(v, ",") {
			target, params, _ := strings.Cut(strings.TrimSpace(part), ";")
			rel := strings.TrimSpace(params)
			rel = strings.TrimPrefix(rel, "rel=")
			out[strings.Trim(rel, `"`)] = strings.Trim(target, "<>")
		}
	}
	return out
}

func stateFile(t *testing.T) string { return filepath.Join(t.TempDir(), "hub.json") }

// clock is a settable clock for leases.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func newClock() *clock { return &clock{now: time.Date(2026, 11, 27, 8, 0, 0, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) add(d time.Duration) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	return c.now
}
