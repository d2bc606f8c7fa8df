package websub

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestChallengeNotEchoed: a callback that answers the verification with
// anything but a 2xx echo of hub.challenge gets no subscription.
func TestChallengeNotEchoed(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		answer func(w http.ResponseWriter, q url.Values)
		want   error
	}{
		{"404", func(w http.ResponseWriter, q url.Values) { http.NotFound(w, nil) }, ErrStatus},
		{"other body", func(w http.ResponseWriter, q url.Values) { io.WriteString(w, "yes please") }, ErrChallenge},
		{"empty", func(w http.ResponseWriter, q url.Values) {}, ErrChallenge},
		{"challenge in a 500", func(w http.ResponseWriter, q url.Values) {
			w.WriteHeader(http.StatusInternalServerError)
			io.WriteString(w, q.Get("hub.challenge"))
		}, ErrStatus},
		{"challenge and a newline", func(w http.ResponseWriter, q url.Values) { io.WriteString(w, q.Get("hub.challenge")+"\n") }, ErrChallenge},
		{"challenge in spaces", func(w http.ResponseWriter, q url.Values) { io.WriteString(w, " "+q.Get("hub.challenge")+" ") }, ErrChallenge},
		{"challenge twice", func(w http.ResponseWriter, q url.Values) {
			io.WriteString(w, q.Get("hub.challenge")+q.Get("hub.challenge"))
		}, ErrChallenge},
		{"challenge after 1 MiB", func(w http.ResponseWriter, q url.Values) {
			io.WriteString(w, strings.Repeat(" ", 1<<20)+q.Get("hub.challenge"))
		}, ErrChallenge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, Options{})
			s := newSubscriber(t)
			s.answer = tc.answer
			e := f.subscribe(url.Values{"hub.topic": {"http://127.0.0.1:1/topic"}, "hub.callback": {s.callback("/cb")}})
			if e.Kind != Refused || !errors.Is(e.Err, tc.want) {
				t.Errorf("event %v (%v), want refused with %v", e.Kind, e.Err, tc.want)
			}
			if subs := f.hub.Subscriptions(); len(subs) != 0 {
				t.Errorf("subscriptions %+v after a refused verification", subs)
			}
		})
	}
}

// TestVerifyRedirectRefused: a callback that answers the verification
// with a redirect is not verified, whatever the redirect's scheme, and
// even to a callback that would echo the challenge, which is never
// asked; with the hub's own client or one given in Options. It gets no
// delivery.
func TestVerifyRedirectRefused(t *testing.T) {
	t.Parallel()
	echo := newSubscriber(t)
	for name, c := range map[string]*http.Client{"default client": nil, "given client": {}} {
		for _, to := range []struct {
			loc  string
			code int
		}{{"file:///etc/passwd", http.StatusFound}, {echo.callback("/echo"), http.StatusFound}, {echo.callback("/echo"), http.StatusTemporaryRedirect}, {echo.callback("/echo"), http.StatusPermanentRedirect}} {
			t.Run(fmt.Sprintf("%s %d %s", name, to.code, to.loc), func(t *testing.T) {
				f := newFixture(t, Options{Client: c})
				s := newSubscriber(t)
				s.answer = func(w http.ResponseWriter, q url.Values) {
					w.Header().Set("Location", to.loc+"?"+q.Encode())
					w.WriteHeader(to.code)
				}
				echo.mu.Lock()
				before := len(echo.verifies)
				echo.mu.Unlock()
				topic := f.url + "/t"
				e := f.subscribe(url.Values{"hub.topic": {topic}, "hub.callback": {s.callback("/cb")}})
				if e.Kind != Refused || !errors.Is(e.Err, ErrStatus) {
					t.Errorf("event %v (%v), want refused: a redirect is not a 2xx", e.Kind, e.Err)
				}
				echo.mu.Lock()
				followed := len(echo.verifies) - before
				echo.mu.Unlock()
				if followed != 0 {
					t.Errorf("the redirect was followed")
				}
				f.notify(topic, "text/plain", "x")
				if e := f.next(Published); e.Subscribers != 0 || s.posts() != 0 {
					t.Errorf("content went to %d subscribers, %d to the redirecting callback", e.Subscribers, s.posts())
				}
			})
		}
	}
}

// TestLatestRequestWins: when an unsubscription is verified before the
// subscription sent ahead of it, the later request's outcome stands.
func TestLatestRequestWins(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	s := newSubscriber(t)
	unsubscribed := make(chan struct{})
	s.answer = func(w http.ResponseWriter, q url.Values) {
		if q.Get("hub.mode") == "subscribe" {
			select {
			case <-unsubscribed:
			case <-time.After(wait):
			}
		}
		io.WriteString(w, q.Get("hub.challenge"))
	}
	v := url.Values{"hub.topic": {"http://127.0.0.1:1/t"}, "hub.callback": {s.callback("/cb")}}
	v.Set("hub.mode", "subscribe")
	if code, _ := f.form(v); code != 202 {
		t.Fatal(code)
	}
	v.Set("hub.mode", "unsubscribe")
	if e := f.subscribe(v); e.Kind != Unsubscribed {
		t.Fatalf("event %v (%v)", e.Kind, e.Err)
	}
	close(unsubscribed)
	if e := f.next(Subscribed, Refused); e.Kind != Refused || !errors.Is(e.Err, ErrSuperseded) {
		t.Errorf("the earlier subscription, verified last: event %v (%v), want refused as superseded", e.Kind, e.Err)
	}
	if subs := f.hub.Subscriptions(); len(subs) != 0 {
		t.Errorf("the earlier subscription, verified last, won: %+v", subs)
	}
}

// TestBadRequests: malformed requests are answered 4xx with the reason,
// and nothing is verified.
func TestBadRequests(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{AllowTopic: func(topic string) error {
		if strings.Contains(topic, "secret-area") {
			return errors.New("not a topic of this Source")
		}
		return nil
	}})
	cb, topic := "http://127.0.0.1:1/cb", "http://127.0.0.1:1/topic"
	for _, tc := range []struct {
		form   url.Values
		status int
		reason string
	}{
		{url.Values{"hub.topic": {topic}, "hub.callback": {cb}}, 400, "hub.mode is missing"},
		{url.Values{"hub.mode": {"subscribed"}, "hub.topic": {topic}, "hub.callback": {cb}}, 400, `hub.mode "subscribed"`},
		{url.Values{"hub.mode": {"subscribe"}, "hub.topic": {topic}}, 400, "hub.callback is missing"},
		{url.Values{"hub.mode": {"subscribe"}, "hub.topic": {topic}, "hub.callback": {"ftp://127.0.0.1/cb"}}, 400, "hub.callback"},
		{url.Values{"hub.mode": {"subscribe"}, "hub.topic": {topic}, "hub.callback": {"/cb"}}, 400, "hub.callback"},
		{url.Values{"hub.mode": {"subscribe"}, "hub.callback": {cb}}, 400, "hub.topic is missing"},
		{url.Values{"hub.mode": {"unsubscribe"}, "hub.topic": {"mailto:a@b"}, "hub.callback": {cb}}, 400, "hub.topic"},
		{url.Values{"hub.mode": {"subscribe"}, "hub.topic": {topic}, "hub.callback": {cb}, "hub.lease_seconds": {"-5"}}, 400, "hub.lease_seconds"},
		{url.Values{"hub.mode": {"subscribe"}, "hub.topic": {topic}, "hub.callback": {cb}, "hub.lease_seconds": {"1h"}}, 400, "hub.lease_seconds"},
		{url.Values{"hub.mode": {"subscribe"}, "hub.topic": {topic}, "hub.callback": {cb}, "hub.secret": {strings.Repeat("s", 200)}}, 400, "less than 200"},
		{url.Values{"hub.mode": {"subscribe"}, "hub.topic": {"http://127.0.0.1:1/secret-area/x"}, "hub.callback": {cb}}, 403, "not a topic of this Source"},
		{url.Values{"hub.mode": {"publish"}}, 400, "hub.topic"},
		{url.Values{"hub.mode": {"publish"}, "hub.url": {"gopher://x/"}}, 400, "hub.url"},
	} {
		code, body := f.form(tc.form)
		if code != tc.status || !strings.Contains(body, tc.reason) {
			t.Errorf("%v: HTTP %d %q, want %d naming %q", tc.form, code, body, tc.status, tc.reason)
		}
	}
	// A secret of 199 bytes is taken.
	if code, body := f.form(url.Values{"hub.mode": {"subscribe"}, "hub.topic": {topic}, "hub.callback": {cb}, "hub.secret": {strings.Repeat("s", 199)}}); code != 202 {
		t.Errorf("a 199-byte secret: HTTP %d %s", code, body)
	}
	resp, err := http.Get(f.url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "POST" {
		t.Errorf("GET of the hub: HTTP %d Allow %q, want 405 and POST", resp.StatusCode, resp.Header.Get("Allow"))
	}
}

// TestLeaseBounds: a lease asked for is kept within MinLease and
// MaxLease, and the verification says the one granted.
func TestLeaseBounds(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{MinLease: time.Minute, MaxLease: time.Hour})
	s := newSubscriber(t)
	for _, tc := range []struct{ ask, want string }{
		{"1", "60"}, {"600", "600"}, {"99999999999999999", "3600"}, {"", "3600"},
	} {
		v := url.Values{"hub.topic": {"http://127.0.0.1:1/t"}, "hub.callback": {s.callback("/cb")}}
		if tc.ask != "" {
			v.Set("hub.lease_seconds", tc.ask)
		}
		e := f.subscribe(v)
		if got := s.lastVerify().Get("hub.lease_seconds"); e.Kind != Subscribed || got != tc.want || strconv.Itoa(int(e.Lease/time.Second)) != tc.want {
			t.Errorf("asked %q: event %v lease %s, verification said %q; want %s s", tc.ask, e.Kind, e.Lease, got, tc.want)
		}
	}
}

// TestNotification: a Source posts a ResourceSync notification to the
// hub URL; subscribers get it with its Content-Type and links, and the
// topic URL answers it.
func TestNotification(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	s := newSubscriber(t)
	topic := f.url + "/framework"
	if e := f.subscribe(url.Values{"hub.topic": {topic}, "hub.callback": {s.callback("/cb")}, "hub.secret": {"k"}}); e.Kind != Subscribed {
		t.Fatalf("event %v (%v)", e.Kind, e.Err)
	}
	// Before any notification, the topic answers empty, with the links
	// a subscriber discovers the hub by.
	resp, body := get(t, topic)
	if resp.StatusCode != 200 || body != "" || resp.Header.Get("Content-Length") != "0" || links(resp.Header)["hub"] != f.url {
		t.Errorf("GET of a topic with no notification: HTTP %d %q Content-Length %q links %v", resp.StatusCode, body, resp.Header.Get("Content-Length"), resp.Header.Values("Link"))
	}
	payload := `<?xml version="1.0" encoding="UTF-8"?>` + "\n" + `<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/"><rs:md capability="framework-notification"/></urlset>`
	caps := "http://127.0.0.1:1/dataset1/capabilitylist.xml"
	code, msg := f.notify(topic, "application/xml", payload, "<"+caps+`>; rel="resourcesync"`)
	if code != http.StatusAccepted || !strings.HasSuffix(msg, "goes to 1 subscriber\n") {
		t.Fatalf("notification: HTTP %d %q, want 202 for 1 subscriber", code, msg)
	}
	d := s.delivery(t)
	checkContent(t, d, f.url, topic, "application/xml", payload)
	if l := links(d.header); l["resourcesync"] != caps {
		t.Errorf("delivered links %v, want rel=resourcesync %s passed on", d.header.Values("Link"), caps)
	}
	if !CheckSignature("k", d.header.Get("X-Hub-Signature"), []byte(d.body)) {
		t.Errorf("signature %q does not check", d.header.Get("X-Hub-Signature"))
	}
	resp, body = get(t, topic)
	if resp.StatusCode != 200 || body != payload || resp.Header.Get("Content-Type") != "application/xml" || links(resp.Header)["self"] != topic {
		t.Errorf("GET of the topic: HTTP %d %q %q links %v, want the latest notification", resp.StatusCode, resp.Header.Get("Content-Type"), body, resp.Header.Values("Link"))
	}
	if resp, _ := get(t, f.srv.URL+"/elsewhere"); resp.StatusCode != 404 {
		t.Errorf("GET of a path outside the hub: HTTP %d, want 404", resp.StatusCode)
	}
}

// TestNotificationRefused: a notification without a topic, naming another
// hub, empty, too large, or from a publisher not allowed, is refused and
// goes to nobody.
func TestNotificationRefused(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{MaxContent: 100, AllowPublisher: func(r *http.Request) error {
		if r.Header.Get("X-Test-Publisher") == "stranger" {
			return errors.New("not our Source")
		}
		return nil
	}})
	topic := f.url + "/framework"
	post := func(hdr map[string]string, body string) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, f.url, strings.NewReader(body))
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	self := "<" + topic + `>; rel="self"`
	for _, tc := range []struct {
		hdr    map[string]string
		body   string
		status int
		reason string
	}{
		{map[string]string{"Content-Type": "application/xml"}, "<urlset/>", 400, "rel=\"self\""},
		{map[string]string{"Content-Type": "application/xml", "Link": self + `, <http://127.0.0.1:1/other-hub>; rel="hub"`}, "<urlset/>", 400, "not this hub"},
		{map[string]string{"Content-Type": "application/xml", "Link": self}, "", 400, "empty"},
		{map[string]string{"Link": self}, "<urlset/>", 400, "Content-Type"},
		{map[string]string{"Content-Type": "application/xml", "Link": self}, strings.Repeat("x", 101), 413, "larger than 100"},
		{map[string]string{"Content-Type": "application/xml", "Link": self, "X-Test-Publisher": "stranger"}, "<urlset/>", 403, "not our Source"},
	} {
		if code, msg := post(tc.hdr, tc.body); code != tc.status || !strings.Contains(msg, tc.reason) {
			t.Errorf("%v: HTTP %d %q, want %d naming %q", tc.hdr, code, msg, tc.status, tc.reason)
		}
	}
	if resp, body := get(t, topic); body != "" {
		t.Errorf("a refused notification became the topic's content: HTTP %d %q", resp.StatusCode, body)
	}
}

// TestDefaultPublisherIsLocal: by default only a loopback client may post
// a notification directly.
func TestDefaultPublisherIsLocal(t *testing.T) {
	t.Parallel()
	r := &http.Request{RemoteAddr: "127.0.0.1:5555"}
	if err := fromLoopback(r); err != nil {
		t.Errorf("127.0.0.1 refused: %v", err)
	}
	for _, a := range []string{"192.0.2.7:5555", "[2001:db8::1]:80", "garbage"} {
		if err := fromLoopback(&http.Request{RemoteAddr: a}); err == nil {
			t.Errorf("%s allowed to post notifications", a)
		}
	}
}

// TestRestartKeepsSubscriptions: a hub started again on the same state
// file delivers to the subscriptions of the one before, with their
// secrets, and answers its topics' latest notifications.
func TestRestartKeepsSubscriptions(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{StateFile: stateFile(t)})
	s := newSubscriber(t)
	topic := f.url + "/change"
	if e := f.subscribe(url.Values{"hub.topic": {topic}, "hub.callback": {s.callback("/cb")}, "hub.secret": {"persisted"}}); e.Kind != Subscribed {
		t.Fatalf("event %v (%v)", e.Kind, e.Err)
	}
	f.notify(topic, "application/xml", "<urlset>1</urlset>")
	s.delivery(t)
	fi, err := os.Stat(f.opts.StateFile)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("state file: %v, mode %v; want 0600", err, fi)
	}
	f.restart()
	if subs := f.hub.Subscriptions(); len(subs) != 1 || subs[0].Callback != s.callback("/cb") || !subs[0].Signed {
		t.Fatalf("after restart: %+v", subs)
	}
	if _, body := get(t, topic); body != "<urlset>1</urlset>" {
		t.Errorf("after restart the topic answers %q", body)
	}
	code, _ := f.notify(topic, "application/xml", "<urlset>2</urlset>")
	d := s.delivery(t)
	if code != 202 || d.body != "<urlset>2</urlset>" || !CheckSignature("persisted", d.header.Get("X-Hub-Signature"), []byte(d.body)) {
		t.Errorf("after restart: HTTP %d, delivered %q signed %q", code, d.body, d.header.Get("X-Hub-Signature"))
	}
}

// TestCorruptState: a state file that is not the hub's is an error, not
// an empty hub that would overwrite it.
func TestCorruptState(t *testing.T) {
	t.Parallel()
	p := stateFile(t)
	os.WriteFile(p, []byte("{not json"), 0o600)
	if _, err := New(Options{URL: "http://127.0.0.1:1/hub", StateFile: p}); err == nil {
		t.Error("New took a corrupt state file")
	}
	os.WriteFile(p, []byte(`{"version":99}`), 0o600)
	if _, err := New(Options{URL: "http://127.0.0.1:1/hub", StateFile: p}); err == nil || !strings.Contains(err.Error(), "version") {
		t.Errorf("New took a state file of another version: %v", err)
	}
}

// TestLeaseExpiry: once a lease has run out the subscriber gets no more
// content, in memory or after a restart.
func TestLeaseExpiry(t *testing.T) {
	t.Parallel()
	c := newClock()
	f := newFixture(t, Options{Now: c.Now, StateFile: stateFile(t)})
	old, renewed := newSubscriber(t), newSubscriber(t)
	topic := f.url + "/framework"
	for _, s := range []*subscriber{old, renewed} {
		if e := f.subscribe(url.Values{"hub.topic": {topic}, "hub.callback": {s.callback("/cb")}, "hub.lease_seconds": {"600"}}); e.Kind != Subscribed {
			t.Fatalf("event %v (%v)", e.Kind, e.Err)
		}
	}
	c.add(9 * time.Minute)
	if e := f.subscribe(url.Values{"hub.topic": {topic}, "hub.callback": {renewed.callback("/cb")}, "hub.lease_seconds": {"600"}}); e.Kind != Subscribed {
		t.Fatalf("renewal: %v (%v)", e.Kind, e.Err)
	}
	c.add(2 * time.Minute) // the first lease has run out, the renewed one not
	f.notify(topic, "application/xml", "<urlset/>")
	if e := f.next(Expired); e.Callback != old.callback("/cb") {
		t.Errorf("expired %s, want %s", e.Callback, old.callback("/cb"))
	}
	renewed.delivery(t)
	c.add(10 * time.Minute) // now the renewed one too
	f.restart()
	if subs := f.hub.Subscriptions(); len(subs) != 0 {
		t.Errorf("subscriptions after every lease ran out: %+v", subs)
	}
	f.notify(topic, "application/xml", "<urlset/>")
	f.hub.Close()
	if old.posts() != 0 || renewed.posts() != 1 {
		t.Errorf("deliveries: %d to the expired subscriber, %d to the renewed one; want 0 and 1", old.posts(), renewed.posts())
	}
}

// TestRetryThenDrop: a failing subscriber is retried with growing waits,
// then dropped from that delivery, keeping its subscription; the others
// are served meanwhile, and the publisher is answered at once.
func TestRetryThenDrop(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{Attempts: 4, RetryWait: 20 * time.Millisecond})
	bad, flaky, good := newSubscriber(t), newSubscriber(t), newSubscriber(t)
	bad.status = func(int) int { return http.StatusServiceUnavailable }
	flaky.status = func(n int) int {
		if n < 3 {
			return http.StatusInternalServerError
		}
		return http.StatusOK
	}
	topic := f.url + "/framework"
	for _, s := range []*subscriber{bad, flaky, good} {
		if e := f.subscribe(url.Values{"hub.topic": {topic}, "hub.callback": {s.callback("/cb")}}); e.Kind != Subscribed {
			t.Fatalf("event %v (%v)", e.Kind, e.Err)
		}
	}
	start := time.Now()
	if code, _ := f.notify(topic, "application/xml", "<urlset/>"); code != 202 {
		t.Fatalf("notification: HTTP %d", code)
	}
	good.delivery(t)
	if d := time.Since(start); d > 20*time.Millisecond*2 {
		t.Logf("the good subscriber took %s", d) // informative: the loaded machine may be slow
	}
	flaky.delivery(t)
	var waits []time.Duration
	deadline := time.After(wait)
	for dropped := false; !dropped; {
		select {
		case e := <-f.events:
			switch {
			case e.Kind == Retrying && e.Callback == bad.callback("/cb"):
				waits = append(waits, e.Wait)
			case e.Kind == Dropped && e.Callback == bad.callback("/cb"):
				dropped = true
				if e.Attempt != 4 || !errors.Is(e.Err, ErrStatus) {
					t.Errorf("dropped after %d attempts (%v), want 4 and the status", e.Attempt, e.Err)
				}
			case e.Kind == Delivered && e.Callback == flaky.callback("/cb") && e.Attempt != 3:
				t.Errorf("the flaky subscriber's delivery at attempt %d, want 3", e.Attempt)
			}
		case <-deadline:
			t.Fatal("the failing subscriber was never dropped")
		}
	}
	want := []time.Duration{20 * time.Millisecond, 40 * time.Millisecond, 80 * time.Millisecond}
	if len(waits) != 3 || waits[0] != want[0] || waits[1] != want[1] || waits[2] != want[2] {
		t.Errorf("waits %v, want %v", waits, want)
	}
	if n := bad.posts(); n != 4 {
		t.Errorf("%d attempts on the failing subscriber, want 4", n)
	}
	if len(f.hub.Subscriptions()) != 3 {
		t.Errorf("a dropped delivery removed a subscription: %+v", f.hub.Subscriptions())
	}
}

// TestRetryTimeBound: no retry starts past RetryTime.
func TestRetryTimeBound(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{Attempts: 100, RetryWait: 30 * time.Millisecond, RetryTime: 100 * time.Millisecond})
	bad := newSubscriber(t)
	bad.status = func(int) int { return http.StatusInternalServerError }
	topic := f.url + "/t"
	f.subscribe(url.Values{"hub.topic": {topic}, "hub.callback": {bad.callback("/cb")}})
	f.notify(topic, "text/plain", "x")
	// Waits of 30 and 60 ms fit in 100 ms, 120 more do not: at most 3
	// tries, fewer on a machine slow enough to spend the time in them.
	if e := f.next(Dropped); e.Attempt < 1 || e.Attempt > 3 {
		t.Errorf("dropped at attempt %d, want at most 3", e.Attempt)
	}
}

// TestPublisherNotBlocked: a subscriber that hangs holds up neither the
// publisher's answer nor another subscriber, and a timeout ends its try.
func TestPublisherNotBlocked(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{Attempts: 1, Timeout: 300 * time.Millisecond})
	hang, good := newSubscriber(t), newSubscriber(t)
	release := make(chan struct{})
	var hung atomic.Int32
	hang.status = func(int) int {
		hung.Add(1)
		<-release
		return 200
	}
	defer close(release)
	topic := f.url + "/t"
	for _, s := range []*subscriber{hang, good} {
		f.subscribe(url.Values{"hub.topic": {topic}, "hub.callback": {s.callback("/cb")}})
	}
	start := time.Now()
	code, _ := f.notify(topic, "text/plain", "x")
	if d := time.Since(start); code != 202 || d > 2*time.Second {
		t.Errorf("notification answered %d after %s", code, d)
	}
	good.delivery(t)
	if e := f.next(Dropped); e.Callback != hang.callback("/cb") || e.Err == nil {
		t.Errorf("dropped %v (%v), want the hanging subscriber, timed out", e.Callback, e.Err)
	}
	if hung.Load() != 1 {
		t.Errorf("%d tries on the hanging subscriber, want 1", hung.Load())
	}
}

// TestGone: a subscriber answering 410 Gone loses its subscription.
func TestGone(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{StateFile: stateFile(t)})
	s := newSubscriber(t)
	s.status = func(int) int { return http.StatusGone }
	topic := f.url + "/t"
	f.subscribe(url.Values{"hub.topic": {topic}, "hub.callback": {s.callback("/cb")}})
	f.notify(topic, "text/plain", "x")
	f.next(Gone)
	f.restart()
	if subs := f.hub.Subscriptions(); len(subs) != 0 {
		t.Errorf("subscriptions after 410 Gone: %+v", subs)
	}
}

// TestSignature: Signature is the HMAC-SHA256 of the body, recomputed
// here; CheckSignature takes every WebSub method and refuses a changed
// body, another secret or a malformed header.
func TestSignature(t *testing.T) {
	t.Parallel()
	body := []byte("<urlset/>\n")
	m := hmac.New(sha256.New, []byte("key"))
	m.Write(body)
	want := "sha256=" + hex.EncodeToString(m.Sum(nil))
	if got := Signature("key", body); got != want {
		t.Fatalf("Signature %q, want %q", got, want)
	}
	if !CheckSignature("key", want, body) {
		t.Error("a good signature refused")
	}
	for name, tc := range map[string]struct{ secret, header, body string }{
		"changed body":   {"key", want, "<urlset/>"},
		"other secret":   {"kez", want, string(body)},
		"unknown method": {"key", "md5=" + want[7:], string(body)},
		"no method":      {"key", want[7:], string(body)},
		"bad hex":        {"key", "sha256=zz", string(body)},
		"empty":          {"key", "", string(body)},
	} {
		if CheckSignature(tc.secret, tc.header, []byte(tc.body)) {
			t.Errorf("%s: accepted", name)
		}
	}
}

// TestClosed: a closed hub answers 503 and delivers nothing more.
func TestClosed(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	f.hub.Close()
	if code, _ := f.form(url.Values{"hub.mode": {"subscribe"}}); code != http.StatusServiceUnavailable {
		t.Errorf("closed hub: HTTP %d, want 503", code)
	}
}

func get(t *testing.T, u string) (*http.Response, string) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// TestExpiryStopsRetries: a lease that runs out while a delivery is
// being retried ends the retries.
func TestExpiryStopsRetries(t *testing.T) {
	t.Parallel()
	c := newClock()
	f := newFixture(t, Options{Now: c.Now, Attempts: 100, RetryWait: 20 * time.Millisecond})
	s := newSubscriber(t)
	s.status = func(n int) int {
		if n == 2 {
			c.add(time.Hour) // past the lease, during the second try
		}
		return http.StatusInternalServerError
	}
	topic := f.url + "/t"
	f.subscribe(url.Values{"hub.topic": {topic}, "hub.callback": {s.callback("/cb")}, "hub.lease_seconds": {"600"}})
	f.notify(topic, "text/plain", "x")
	f.next(Expired)
	f.hub.Close()
	if n := s.posts(); n != 2 {
		t.Errorf("%d tries, want 2: none after the lease ran out", n)
	}
}

// TestTooManyPending: past maxPending verifications waiting, requests are
// answered 503 with Retry-After, and taken again once they are done.
func TestTooManyPending(t *testing.T) {
	defer func(n int64) { maxPending = n }(maxPending)
	maxPending = 2
	f := newFixture(t, Options{})
	s := newSubscriber(t)
	release := make(chan struct{})
	s.answer = func(w http.ResponseWriter, q url.Values) {
		select {
		case <-release:
		case <-time.After(wait):
		}
		io.WriteString(w, q.Get("hub.challenge"))
	}
	v := func(i int) url.Values {
		return url.Values{"hub.mode": {"subscribe"}, "hub.topic": {"http://127.0.0.1:1/t"}, "hub.callback": {s.callback("/cb" + strconv.Itoa(i))}}
	}
	for i := range 2 {
		if code, _ := f.form(v(i)); code != 202 {
			t.Fatalf("request %d: HTTP %d", i, code)
		}
	}
	resp, err := http.PostForm(f.url, v(2))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Errorf("a third request waiting: HTTP %d Retry-After %q, want 503 and a delay", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	close(release)
	f.next(Subscribed)
	f.next(Subscribed)
	for deadline := time.Now().Add(wait); f.hub.pending.Load() > 0 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond) // the events come just before the count goes down
	}
	if e := f.subscribe(v(2)); e.Kind != Subscribed {
		t.Errorf("once the others are done: %v (%v)", e.Kind, e.Err)
	}
}

// TestFetchedForNobody: what hub.mode=publish fetches for a topic nobody
// subscribes to is not kept, since anyone may ask for it.
func TestFetchedForNobody(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{StateFile: stateFile(t)})
	pub := newPublisher(t, "text/plain", "fetched")
	if e := f.publish(pub.url); e.Kind != Published || e.Subscribers != 0 {
		t.Fatalf("event %v to %d", e.Kind, e.Subscribers)
	}
	f.hub.mu.Lock()
	n := len(f.hub.topics)
	f.hub.mu.Unlock()
	if n != 0 {
		t.Errorf("%d topics kept after a fetch for nobody", n)
	}
	s := newSubscriber(t)
	f.subscribe(url.Values{"hub.topic": {pub.url}, "hub.callback": {s.callback("/cb")}})
	f.publish(pub.url)
	s.delivery(t)
	f.hub.mu.Lock()
	c := f.hub.topics[pub.url]
	f.hub.mu.Unlock()
	if c == nil || string(c.body) != "fetched" {
		t.Errorf("the content delivered to a subscriber is not the topic's latest: %+v", c)
	}
}
