package follow

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rsdump/rsdump/finding"
	"github.com/rsdump/rsdump/layout"
	"github.com/rsdump/rsdump/notify"
	"github.com/rsdump/rsdump/pack"
	"github.com/rsdump/rsdump/resourcesync"
	"github.com/rsdump/rsdump/serve"
	"github.com/rsdump/rsdump/websub"
)

// wait bounds every wait of these tests.
const wait = 10 * time.Second

// source is a pack output served with a hub on loopback.
type source struct {
	t        *testing.T
	url      string
	src, out string
	hub      *websub.Hub
	opts     pack.Options
}

func newSource(t *testing.T, hub websub.Options) *source {
	return newSourceWith(t, hub, true, nil)
}

// newSourceWith is newSource whose Capability List advertises the
// channels only when channels is set, and whose handler is wrapped by
// wrap, when given.
func newSourceWith(t *testing.T, hub websub.Options, channels bool, wrap func(http.Handler) http.Handler) *source {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &source{t: t, url: "http://" + ln.Addr().String() + "/", src: t.TempDir(), out: t.TempDir()}
	s.opts = pack.Options{BaseURL: s.url + "data/", DumpURL: s.url, Channels: layout.Channels{Hub: s.url + "hub", ChangeNotification: true}}
	if !channels {
		s.opts.Channels = layout.Channels{}
	}
	hub.URL = s.url + "hub"
	if s.hub, err = websub.New(hub); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.hub.Close() })
	s.write("a.txt", "a")
	s.pack(false)
	h, err := serve.New(s.out, serve.Options{BaseURL: s.opts.BaseURL, DumpURL: s.url, Hub: s.hub})
	if err != nil {
		t.Fatal(err)
	}
	if wrap != nil {
		h = wrap(h)
	}
	srv := &http.Server{Handler: h}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return s
}

func (s *source) write(name, data string) {
	if err := os.WriteFile(filepath.Join(s.src, name), []byte(data), 0o644); err != nil {
		s.t.Fatal(err)
	}
}

// pack publishes the source and notifies the hub.
func (s *source) pack(changes bool) {
	o := s.opts
	o.Changes = changes
	res, err := pack.Pack(context.Background(), s.src, s.out, o)
	if err != nil {
		s.t.Fatal(err)
	}
	if changes {
		if n := (&notify.Publisher{}).Publish(context.Background(), &res.Published); n != 0 {
			s.t.Fatalf("%d notifications not taken", n)
		}
	}
}

// events collects a Follow's events.
type events struct {
	mu   sync.Mutex
	all  []Event
	more chan struct{}
}

func (e *events) add(ev finding.Event) {
	if fe, ok := ev.(Event); ok {
		e.mu.Lock()
		e.all = append(e.all, fe)
		e.mu.Unlock()
		select {
		case e.more <- struct{}{}:
		default:
		}
	}
}

// waitFor waits until n events satisfy ok.
func (e *events) waitFor(t *testing.T, what string, n int, ok func(Event) bool) []Event {
	t.Helper()
	deadline := time.After(wait)
	for {
		var got []Event
		e.mu.Lock()
		for _, ev := range e.all {
			if ok(ev) {
				got = append(got, ev)
			}
		}
		all := append([]Event(nil), e.all...)
		e.mu.Unlock()
		if len(got) >= n {
			return got
		}
		select {
		case <-e.more:
		case <-deadline:
			t.Fatalf("fewer than %d %s within %s: %v", n, what, wait, all)
		}
	}
}

// follow runs Follow in the background until the test ends, and returns
// its events and a stop that waits for it.
func follow(t *testing.T, s *source, o Options) (*events, func() error) {
	t.Helper()
	ev := &events{more: make(chan struct{}, 1)}
	o.Events = ev.add
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	dest := t.TempDir()
	go func() { done <- Follow(ctx, resourcesync.LocationOf(s.url+"capabilitylist.xml"), dest, o) }()
	var once sync.Once
	var err error
	stop := func() error {
		once.Do(func() {
			cancel()
			select {
			case err = <-done:
			case <-time.After(wait):
				t.Error("Follow did not stop")
			}
		})
		return err
	}
	t.Cleanup(func() { stop() })
	return ev, stop
}

func TestLeaseRenewed(t *testing.T) {
	t.Parallel()
	s := newSource(t, websub.Options{MinLease: time.Second, Lease: 2 * time.Second})
	ev, stop := follow(t, s, Options{MinRenew: time.Second})
	subs := ev.waitFor(t, "subscriptions and renewals", 4, func(e Event) bool { return e.Kind == Subscribed })
	for _, e := range subs {
		if e.Lease != 2*time.Second {
			t.Errorf("lease %s, want the hub's 2s", e.Lease)
		}
	}
	// Past the first lease, the subscriptions are still there, and a
	// notification still arrives.
	time.Sleep(2500 * time.Millisecond)
	if n := len(s.hub.Subscriptions()); n != 2 {
		t.Fatalf("%d subscriptions after the first lease ran out, want 2 renewed", n)
	}
	s.write("b.txt", "b")
	s.pack(true)
	ev.waitFor(t, "syncs on a notification", 1, func(e Event) bool { return e.Kind == Synced && strings.Contains(e.Why, "notification") })
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	// The hub removes a subscription once its callback confirmed the
	// unsubscription, which is when Follow goes on.
	for deadline := time.Now().Add(wait); len(s.hub.Subscriptions()) != 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d subscriptions %s after Follow stopped, want 0", len(s.hub.Subscriptions()), wait)
		}
	}
}

// TestCallbackBehindProxy: with CallbackURL, the hub reaches the callback
// through it (a reverse proxy here), never at the listener's address.
func TestCallbackBehindProxy(t *testing.T) {
	t.Parallel()
	s := newSource(t, websub.Options{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var proxied sync.Map
	back, _ := url.Parse("http://" + ln.Addr().String())
	rp := httputil.NewSingleHostReverseProxy(back)
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		proxied.Store(r.Method, true)
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(proxy.Close) // after Follow stops: it unsubscribes through the proxy
	ev, _ := follow(t, s, Options{Listener: ln, CallbackURL: proxy.URL + "/rsdump/"})
	ev.waitFor(t, "subscriptions", 2, func(e Event) bool { return e.Kind == Subscribed })
	for _, sub := range s.hub.Subscriptions() {
		if !strings.HasPrefix(sub.Callback, proxy.URL+"/rsdump/") {
			t.Errorf("callback %s is not behind the proxy %s", sub.Callback, proxy.URL)
		}
	}
	s.write("b.txt", "b")
	s.pack(true)
	ev.waitFor(t, "syncs on a notification", 1, func(e Event) bool { return e.Kind == Synced && strings.Contains(e.Why, "notification") })
	for _, m := range []string{http.MethodGet, http.MethodPost} {
		if _, ok := proxied.Load(m); !ok {
			t.Errorf("no %s went through the proxy", m)
		}
	}
}

// TestHubFromLinkHeader: a Capability List that advertises no channel,
// served with WebSub's Link rel="hub" and rel="self" (a Source behind a
// web server set up to announce its hub), is followed at that hub and
// topic.
func TestHubFromLinkHeader(t *testing.T) {
	t.Parallel()
	var topic, hubURL string
	s := newSourceWith(t, websub.Options{}, false, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if strings.HasSuffix(r.URL.Path, "/capabilitylist.xml") {
				w.Header().Add("Link", "<"+hubURL+">; rel=\"hub\"")
				w.Header().Add("Link", "<"+topic+">; rel=\"self\"")
			}
			h.ServeHTTP(w, r)
		})
	})
	hubURL, topic = s.url+"hub", s.url+"hub/announce"
	if b, _ := os.ReadFile(filepath.Join(s.out, layout.CapabilityListName)); strings.Contains(string(b), "notification") {
		t.Fatalf("the Capability List advertises a channel:\n%s", b)
	}
	ev, _ := follow(t, s, Options{})
	if e := ev.waitFor(t, "subscriptions", 1, func(e Event) bool { return e.Kind == Subscribed })[0]; e.Topic != topic || e.Hub != hubURL {
		t.Fatalf("subscribed to %s at %s, want %s at %s", e.Topic, e.Hub, topic, hubURL)
	}
	s.write("b.txt", "b")
	o := s.opts
	o.Changes = true
	if _, err := pack.Pack(context.Background(), s.src, s.out, o); err != nil {
		t.Fatal(err)
	}
	// What another Source would send: the specification's Example 1.
	body := []byte(`<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/">
<rs:ln rel="up" href="` + s.url + `capabilitylist.xml"/>
<rs:md capability="framework-notification"/>
<url><loc>` + s.url + `changelist.xml</loc><rs:md change="updated" capability="changelist"/></url>
</urlset>`)
	if err := (&notify.Publisher{}).Submit(context.Background(), notify.Notification{Hub: hubURL, Topic: topic, Body: body}); err != nil {
		t.Fatal(err)
	}
	e := ev.waitFor(t, "syncs on a notification", 1, func(e Event) bool { return e.Kind == Synced && strings.Contains(e.Why, "notification") })[0]
	if e.Result.Written != 1 {
		t.Errorf("the sync on the notification wrote %d files, want b.txt", e.Result.Written)
	}
}
