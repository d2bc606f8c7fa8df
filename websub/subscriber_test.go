package websub

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// newClient serves a Subscriber on loopback; its notifications and
// ignored contents go to channels.
func newClient(t *testing.T) (*Subscriber, chan Content, chan error) {
	t.Helper()
	got, ignored := make(chan Content, 10), make(chan error, 10)
	s := &Subscriber{Notify: func(c Content) { got <- c }, Ignored: func(_ string, err error) { ignored <- err }}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	s.CallbackURL = srv.URL + "/cb/"
	return s, got, ignored
}

func TestSubscriberTakesOnlySignedContent(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	s, got, ignored := newClient(t)
	topic := f.srv.URL + "/hub/framework"
	sub, err := s.Subscribe(context.Background(), f.url, topic, time.Hour, wait)
	if err != nil {
		t.Fatal(err)
	}
	f.next(Subscribed) // the hub applies it once the challenge is answered
	if sub.Lease != time.Hour || !strings.HasPrefix(sub.Callback, s.CallbackURL) || !sub.Signed {
		t.Fatalf("subscription %+v: want a lease of 1h, a callback under %s, signed", sub, s.CallbackURL)
	}
	if subs := f.hub.Subscriptions(); len(subs) != 1 || !subs[0].Signed || subs[0].Callback != sub.Callback {
		t.Fatalf("hub's subscriptions %+v: want the one signed subscription", subs)
	}

	// Content the hub signs is taken, with its topic and links.
	if code, body := f.notify(topic, "application/xml", "<urlset/>"); code != http.StatusAccepted {
		t.Fatalf("notification: HTTP %d %s", code, body)
	}
	select {
	case c := <-got:
		if c.Topic != topic || string(c.Body) != "<urlset/>" || c.ContentType != "application/xml" {
			t.Fatalf("content %+v", c)
		}
	case <-time.After(wait):
		t.Fatal("no content delivered")
	}

	// A forger who knows the callback, without the secret, is ignored.
	for _, sig := range []string{"", "sha256=" + strings.Repeat("00", 32), Signature("guessed", []byte("<urlset/>"))} {
		req, _ := http.NewRequest(http.MethodPost, sub.Callback, strings.NewReader("<urlset/>"))
		req.Header.Set("Content-Type", "application/xml")
		if sig != "" {
			req.Header.Set("X-Hub-Signature", sig)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			t.Errorf("forged content with signature %q: HTTP %d, want a 2xx that tells the forger nothing", sig, resp.StatusCode)
		}
		select {
		case err := <-ignored:
			if !errors.Is(err, ErrBadSignature) {
				t.Errorf("forged content with signature %q: %v, want ErrBadSignature", sig, err)
			}
		case c := <-got:
			t.Fatalf("forged content with signature %q taken: %+v", sig, c)
		case <-time.After(wait):
			t.Fatalf("forged content with signature %q: neither taken nor ignored", sig)
		}
	}
	select {
	case c := <-got:
		t.Fatalf("forged content taken: %+v", c)
	default:
	}

	// A verification for another topic, or a mode not asked for, is not
	// confirmed.
	for _, q := range []string{"hub.mode=subscribe&hub.topic=http://127.0.0.1:1/other&hub.challenge=x",
		"hub.mode=unsubscribe&hub.topic=" + topic + "&hub.challenge=x"} {
		resp, err := http.Get(sub.Callback + "?" + q)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("verification %s: HTTP %d, want 404", q, resp.StatusCode)
		}
	}

	if err := s.Unsubscribe(context.Background(), f.url, topic, wait); err != nil {
		t.Fatal(err)
	}
	f.next(Unsubscribed)
	if subs := f.hub.Subscriptions(); len(subs) != 0 {
		t.Fatalf("after unsubscribing the hub keeps %+v", subs)
	}
}

func TestSubscriptionDenied(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{MaxSubscriptions: 1})
	a, _, _ := newClient(t)
	b, _, _ := newClient(t)
	topic := f.srv.URL + "/hub/framework"
	if _, err := a.Subscribe(context.Background(), f.url, topic, 0, wait); err != nil {
		t.Fatal(err)
	}
	f.next(Subscribed)
	_, err := b.Subscribe(context.Background(), f.url, topic, 0, wait)
	if !errors.Is(err, ErrDenied) || !strings.Contains(err.Error(), "limit of 1 subscription") {
		t.Fatalf("second subscription: %v, want ErrDenied naming the limit", err)
	}
	if e := f.next(Denied); e.Err == nil {
		t.Fatal("Denied event without its reason")
	}
	// A renewal is never denied.
	if _, err := a.Subscribe(context.Background(), f.url, topic, 0, wait); err != nil {
		t.Fatalf("renewal at the limit: %v", err)
	}
	if n := len(f.hub.Subscriptions()); n != 1 {
		t.Fatalf("%d subscriptions, want 1", n)
	}
}

func TestPublicOnlyRefusesOwnNetwork(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{PublicOnly: true})
	s, _, _ := newClient(t)
	_, err := s.Subscribe(context.Background(), f.url, f.srv.URL+"/hub/framework", 0, time.Second)
	if !errors.Is(err, ErrTimeout) {
		t.Fatalf("subscription from loopback to a PublicOnly hub: %v, want no verification", err)
	}
	if e := f.next(Refused); !errors.Is(e.Err, ErrPrivateAddress) {
		t.Fatalf("refused with %v, want ErrPrivateAddress", e.Err)
	}
	// And hub.mode=publish does not fetch a topic on loopback either.
	if code, _ := f.form(map[string][]string{"hub.mode": {"publish"}, "hub.topic": {f.srv.URL + "/hub/framework"}}); code != http.StatusAccepted {
		t.Fatalf("publish: HTTP %d", code)
	}
	if e := f.next(FetchFailed); !errors.Is(e.Err, ErrPrivateAddress) {
		t.Fatalf("fetch failed with %v, want ErrPrivateAddress", e.Err)
	}
}

func TestPublicHost(t *testing.T) {
	t.Parallel()
	for host, want := range map[string]bool{
		"127.0.0.1:8080": false, "localhost": false, "a.localhost:80": false, "[::1]:80": false,
		"10.1.2.3": false, "192.168.0.1:8080": false, "169.254.169.254": false, "[fe80::1]:80": false,
		"0.0.0.0:80": false, "[::ffff:127.0.0.1]:80": false,
		"93.184.215.14": true, "[2001:db8::1]:443": true, "hub.example.org": true,
	} {
		if got := PublicHost(host); got != want {
			t.Errorf("PublicHost(%q) = %v, want %v", host, got, want)
		}
	}
}
