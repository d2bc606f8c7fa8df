package websub

// The checks of the websub.rocks hub suite, with a scripted subscriber and
// publisher on loopback in place of websub.rocks:
//
//	100 typical subscriber request (hub.mode, hub.topic, hub.callback):
//	    202, verification with hub.challenge and hub.lease_seconds, then
//	    content with the topic's Content-Type, its full body, Link
//	    rel=hub and rel=self, and no signature          TestRocks100
//	101 subscriber includes a secret: content signed      TestRocks101
//	102 subscriber sends additional parameters: ignored   TestRocks102
//	103 re-subscribes before expiration: one subscription,
//	    lease renewed, one delivery per update              TestRocks103
//	104 unsubscription: verified, then no more content    TestRocks104
//	105 plaintext topic                                    TestRocks105And106
//	106 JSON topic                                         TestRocks105And106
//
// websub.rocks publishes with hub.mode=publish and hub.topic, and these
// tests do too; TestNotification* cover the ResourceSync direct POST.

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/url"
	"strconv"
	"testing"
	"time"
)

// publish asks the hub to fetch topic and waits until it queued it.
func (f *fixture) publish(topic string) Event {
	f.t.Helper()
	if code, body := f.form(url.Values{"hub.mode": {"publish"}, "hub.topic": {topic}}); code != http.StatusAccepted {
		f.t.Fatalf("publish: HTTP %d %s, want 202", code, body)
	}
	return f.next(Published, FetchFailed)
}

// checkContent checks a delivery against what the topic serves.
func checkContent(t *testing.T, d delivery, hub, topic, ctype, body string) {
	t.Helper()
	if d.body != body {
		t.Errorf("delivered body %q, the topic has %q", d.body, body)
	}
	if got := d.header.Get("Content-Type"); got != ctype {
		t.Errorf("delivered Content-Type %q, the topic's is %q", got, ctype)
	}
	l := links(d.header)
	if l["hub"] != hub || l["self"] != topic {
		t.Errorf("delivered Link rel=hub %q rel=self %q, want %q and %q", l["hub"], l["self"], hub, topic)
	}
}

func TestRocks100(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	pub := newPublisher(t, "text/html; charset=utf-8", "<html><body><h1>post 1</h1></body></html>")
	s := newSubscriber(t)
	e := f.subscribe(url.Values{"hub.topic": {pub.url}, "hub.callback": {s.callback("/cb/100")}})
	if e.Kind != Subscribed {
		t.Fatalf("event %v (%v), want subscribed", e.Kind, e.Err)
	}
	q := s.lastVerify()
	if q.Get("hub.mode") != "subscribe" || q.Get("hub.topic") != pub.url || len(q.Get("hub.challenge")) < 16 {
		t.Errorf("verification %v: want hub.mode=subscribe, hub.topic=%s and a long hub.challenge", q, pub.url)
	}
	if q.Get("hub.lease_seconds") != strconv.Itoa(10*24*3600) {
		t.Errorf("hub.lease_seconds %q, want the default of 10 days", q.Get("hub.lease_seconds"))
	}
	pub.set("<html><body><h1>post 2</h1></body></html>")
	if e := f.publish(pub.url); e.Subscribers != 1 {
		t.Fatalf("published to %d subscribers, want 1 (%v)", e.Subscribers, e)
	}
	d := s.delivery(t)
	checkContent(t, d, f.url, pub.url, "text/html; charset=utf-8", "<html><body><h1>post 2</h1></body></html>")
	if sig := d.header.Get("X-Hub-Signature"); sig != "" {
		t.Errorf("X-Hub-Signature %q without a secret", sig)
	}
}

func TestRocks101(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	pub := newPublisher(t, "application/atom+xml", "<feed/>")
	s := newSubscriber(t)
	secret := "Th3-s3cret-of-t3st-101"
	if e := f.subscribe(url.Values{"hub.topic": {pub.url}, "hub.callback": {s.callback("/cb/101")}, "hub.secret": {secret}}); e.Kind != Subscribed {
		t.Fatalf("event %v (%v), want subscribed", e.Kind, e.Err)
	}
	if q := s.lastVerify(); q.Has("hub.secret") {
		t.Errorf("the verification request carries the secret: %v", q)
	}
	f.publish(pub.url)
	d := s.delivery(t)
	checkContent(t, d, f.url, pub.url, "application/atom+xml", "<feed/>")
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(d.body))
	if want := "sha256=" + hex.EncodeToString(m.Sum(nil)); d.header.Get("X-Hub-Signature") != want {
		t.Errorf("X-Hub-Signature %q, want %q", d.header.Get("X-Hub-Signature"), want)
	}
}

func TestRocks102(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	pub := newPublisher(t, "text/html", "<p>102</p>")
	s := newSubscriber(t)
	// The extra parameters of websub.rocks, and a callback with a query
	// of its own, which the hub must keep (WebSub §5.3).
	cb := s.callback("/cb/102?id=7&x=a%20b")
	e := f.subscribe(url.Values{"hub.topic": {pub.url}, "hub.callback": {cb}, "foo": {"bar"}, "hub.foo": {"hub.bar"}})
	if e.Kind != Subscribed {
		t.Fatalf("event %v (%v), want subscribed", e.Kind, e.Err)
	}
	s.mu.Lock()
	raw := s.rawQuery[0]
	s.mu.Unlock()
	if want := "id=7&x=a%20b&"; len(raw) < len(want) || raw[:len(want)] != want {
		t.Errorf("verification query %q does not start with the callback's own %q", raw, want)
	}
	if q := s.lastVerify(); q.Has("foo") || q.Has("hub.foo") {
		t.Errorf("unknown parameters passed on: %v", q)
	}
	f.publish(pub.url)
	if d := s.delivery(t); d.query != "id=7&x=a%20b" {
		t.Errorf("delivered to query %q, want the callback's", d.query)
	}
}

func TestRocks103(t *testing.T) {
	t.Parallel()
	c := newClock()
	f := newFixture(t, Options{Now: c.Now})
	pub := newPublisher(t, "text/html", "<p>103</p>")
	s := newSubscriber(t)
	v := url.Values{"hub.topic": {pub.url}, "hub.callback": {s.callback("/cb/103")}, "hub.lease_seconds": {"3600"}}
	if e := f.subscribe(v); e.Kind != Subscribed || e.Lease != time.Hour {
		t.Fatalf("event %v lease %s (%v), want subscribed for 1h", e.Kind, e.Lease, e.Err)
	}
	later := c.add(50 * time.Minute)
	if e := f.subscribe(v); e.Kind != Subscribed {
		t.Fatalf("re-subscription: event %v (%v)", e.Kind, e.Err)
	}
	subs := f.hub.Subscriptions()
	if len(subs) != 1 || !subs[0].Expires.Equal(later.Add(time.Hour)) {
		t.Fatalf("subscriptions %+v, want one, renewed to %s", subs, later.Add(time.Hour))
	}
	f.publish(pub.url)
	s.delivery(t)
	f.hub.Close() // waits for every delivery
	if n := s.posts(); n != 1 {
		t.Errorf("%d deliveries for one update, want 1", n)
	}
}

func TestRocks104(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	pub := newPublisher(t, "text/html", "<p>104</p>")
	gone, witness := newSubscriber(t), newSubscriber(t)
	for _, s := range []*subscriber{gone, witness} {
		if e := f.subscribe(url.Values{"hub.topic": {pub.url}, "hub.callback": {s.callback("/cb")}}); e.Kind != Subscribed {
			t.Fatalf("event %v (%v)", e.Kind, e.Err)
		}
	}
	e := f.subscribe(url.Values{"hub.mode": {"unsubscribe"}, "hub.topic": {pub.url}, "hub.callback": {gone.callback("/cb")}})
	if e.Kind != Unsubscribed {
		t.Fatalf("event %v (%v), want unsubscribed", e.Kind, e.Err)
	}
	if q := gone.lastVerify(); q.Get("hub.mode") != "unsubscribe" || q.Get("hub.topic") != pub.url || q.Get("hub.challenge") == "" || q.Has("hub.lease_seconds") {
		t.Errorf("unsubscription verification %v", q)
	}
	if e := f.publish(pub.url); e.Subscribers != 1 {
		t.Errorf("published to %d subscribers, want 1", e.Subscribers)
	}
	witness.delivery(t)
	f.hub.Close()
	if n := gone.posts(); n != 0 {
		t.Errorf("%d deliveries after the unsubscription", n)
	}
}

func TestRocks105And106(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ num, ctype, body string }{
		{"105", "text/plain", "Post 1\nsome plain text, not HTML or XML\n"},
		{"106", "application/json", `{"items":[{"id":1,"content":"a JSON topic"}]}`},
	} {
		t.Run(tc.num, func(t *testing.T) {
			f := newFixture(t, Options{})
			pub := newPublisher(t, tc.ctype, tc.body)
			s := newSubscriber(t)
			if e := f.subscribe(url.Values{"hub.topic": {pub.url}, "hub.callback": {s.callback("/cb/" + tc.num)}}); e.Kind != Subscribed {
				t.Fatalf("event %v (%v)", e.Kind, e.Err)
			}
			f.publish(pub.url)
			checkContent(t, s.delivery(t), f.url, pub.url, tc.ctype, tc.body)
		})
	}
}
