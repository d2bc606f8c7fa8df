package websub

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestSubscriptionCapConcurrent: requests arriving together cannot pass
// MaxSubscriptions: of 600 verified at once under a cap of 100, exactly
// 100 are subscribed and the others denied.
func TestSubscriptionCapConcurrent(t *testing.T) {
	t.Parallel()
	const limit, requests = 100, 600
	f := newFixture(t, Options{MaxSubscriptions: limit})
	s := newSubscriber(t)
	var wg sync.WaitGroup
	for i := range requests {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v := url.Values{"hub.mode": {"subscribe"}, "hub.topic": {f.url + "/t"}, "hub.callback": {s.callback(fmt.Sprintf("/cb%d", i))}}
			resp, err := http.PostForm(f.url, v)
			if err != nil {
				t.Error(err)
				return
			}
			resp.Body.Close()
		}()
	}
	wg.Wait()
	subscribed := 0
	for range requests {
		if f.next(Subscribed, Denied, Refused).Kind == Subscribed {
			subscribed++
		}
	}
	if n := len(f.hub.Subscriptions()); n != limit || subscribed != limit {
		t.Errorf("%d subscriptions (%d subscribed events) after %d requests at once, want the cap of %d", n, subscribed, requests, limit)
	}
}

// TestSecretsSurviveRestart: after a restart each subscriber's delivery
// is signed with its own secret, byte for byte (one that is not UTF-8,
// one with characters JSON escapes), and one that gave none gets none.
func TestSecretsSurviveRestart(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{StateFile: stateFile(t)})
	secrets := []string{"\xff\xfe\x00binary\x80", `<"&>` + "\u2028", ""}
	var subs []*subscriber
	for i, secret := range secrets {
		s := newSubscriber(t)
		subs = append(subs, s)
		v := url.Values{"hub.topic": {f.url + "/t"}, "hub.callback": {s.callback(fmt.Sprintf("/cb%d", i))}}
		if secret != "" {
			v.Set("hub.secret", secret)
		}
		if e := f.subscribe(v); e.Kind != Subscribed {
			t.Fatalf("event %v (%v)", e.Kind, e.Err)
		}
	}
	f.restart()
	f.notify(f.url+"/t", "application/xml", "<urlset/>")
	for i, s := range subs {
		d := s.delivery(t)
		sig := d.header.Get("X-Hub-Signature")
		if secrets[i] == "" {
			if sig != "" {
				t.Errorf("subscriber %d gave no secret, its delivery is signed %q", i, sig)
			}
			continue
		}
		for j, other := range secrets {
			if CheckSignature(other, sig, []byte(d.body)) != (i == j) {
				t.Errorf("subscriber %d's delivery, signed %q: checks with secret %d %v", i, sig, j, i != j)
			}
		}
	}
}

// TestStateIsAnAppendLog: each change appends a line to the state file,
// never rewriting what is there; the file is written whole again only
// when it holds more than twice what it must; a restart reads it back
// exactly, past a last line a crash tore; a state file of version 1 is
// read and written again as a log.
func TestStateIsAnAppendLog(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{StateFile: stateFile(t)})
	s := newSubscriber(t)
	topic := f.url + "/t"
	var before []byte
	for i := range 5 {
		f.subscribe(url.Values{"hub.topic": {topic}, "hub.callback": {s.callback(fmt.Sprintf("/cb%d", i))}, "hub.secret": {fmt.Sprint("secret", i)}})
		after, _ := os.ReadFile(f.opts.StateFile)
		if !bytes.HasPrefix(after, before) || bytes.Count(after, []byte("\n")) != bytes.Count(before, []byte("\n"))+1+btoi(i == 0) {
			t.Fatalf("change %d: the state file was rewritten, not appended to:\n%s\n---\n%s", i, before, after)
		}
		before = after
	}
	f.notify(topic, "application/xml", "<urlset>kept</urlset>")
	for range 5 {
		s.delivery(t)
	}
	os.WriteFile(f.opts.StateFile, append(readFile(t, f.opts.StateFile), `{"sub":{"topic":"`...), 0o600) // torn
	f.restart()
	if n := len(f.hub.Subscriptions()); n != 5 {
		t.Fatalf("%d subscriptions after a restart past a torn line, want 5", n)
	}
	if _, body := get(t, topic); body != "<urlset>kept</urlset>" {
		t.Errorf("the topic answers %q after a restart", body)
	}
	// Many renewals grow the log; it is compacted, and still read back.
	for range 40 {
		f.subscribe(url.Values{"hub.topic": {topic}, "hub.callback": {s.callback("/cb0")}, "hub.secret": {strings.Repeat("x", 150)}})
	}
	f.notify(topic, "application/xml", strings.Repeat("y", minCompact))
	f.notify(topic, "application/xml", strings.Repeat("z", minCompact))
	f.notify(topic, "application/xml", "<urlset>last</urlset>")
	if fi, _ := os.Stat(f.opts.StateFile); fi.Size() > 3*minCompact {
		t.Errorf("the state file holds %d bytes, for 5 subscriptions and a small topic", fi.Size())
	}
	f.restart()
	if n := len(f.hub.Subscriptions()); n != 5 {
		t.Fatalf("%d subscriptions after compaction, want 5", n)
	}
	if _, body := get(t, topic); body != "<urlset>last</urlset>" {
		t.Errorf("the topic answers %q after compaction", body)
	}

	v1 := stateFile(t)
	exp := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	os.WriteFile(v1, []byte(`{"version":1,"subscriptions":[{"topic":"`+topic+`","callback":"`+s.callback("/v1")+`","secret":"old","lease_seconds":3600,"expires":"`+exp+`"}],"topics":[]}`), 0o600)
	g := newFixture(t, Options{StateFile: v1})
	if subs := g.hub.Subscriptions(); len(subs) != 1 || !subs[0].Signed {
		t.Fatalf("a version 1 state file: %+v", subs)
	}
	g.subscribe(url.Values{"hub.topic": {topic}, "hub.callback": {s.callback("/v1b")}})
	if data := readFile(t, v1); !bytes.HasPrefix(data, []byte(`{"version":2}`+"\n")) || bytes.Count(data, []byte("\n")) != 3 {
		t.Errorf("a version 1 state file after a change:\n%s", data)
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func readFile(t *testing.T, name string) []byte {
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestPublishNeedsPublisher: a hub.mode=publish from one AllowPublisher
// does not admit may name only the hub's own topics: another host's is
// refused 403 and never fetched; the hub's own is fetched and delivered,
// and never kept, in memory or in the state file.
func TestPublishNeedsPublisher(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{StateFile: stateFile(t), AllowPublisher: func(*http.Request) error { return fmt.Errorf("not a publisher") }})
	var fetched atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fetched.Add(1)
		io.WriteString(w, "content of their choosing")
	}))
	defer other.Close()
	s := newSubscriber(t)
	for _, topic := range []string{other.URL + "/t", f.url + "/own"} {
		f.subscribe(url.Values{"hub.topic": {topic}, "hub.callback": {s.callback("/cb")}})
	}
	if code, body := f.form(url.Values{"hub.mode": {"publish"}, "hub.topic": {other.URL + "/t"}}); code != http.StatusForbidden {
		t.Errorf("publish of another host's topic: HTTP %d %s, want 403", code, body)
	}
	if e := f.publish(f.url + "/own"); e.Kind != Published || e.Subscribers != 1 {
		t.Errorf("publish of the hub's own topic: %v to %d", e.Kind, e.Subscribers)
	}
	s.delivery(t)
	f.hub.mu.Lock()
	kept := len(f.hub.topics)
	f.hub.mu.Unlock()
	if kept != 0 || fetched.Load() != 0 || bytes.Contains(readFile(t, f.opts.StateFile), []byte(`"topic":{`)) {
		t.Errorf("%d topics kept, the other host fetched %d times", kept, fetched.Load())
	}
}

// TestKeptBounded: the topics' content the hub keeps stays within
// MaxKept: the topics updated longest ago are let go.
func TestKeptBounded(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{StateFile: stateFile(t), MaxKept: 20 << 10})
	body := strings.Repeat("n", 3<<10)
	for i := range 30 {
		if code, _ := f.notify(fmt.Sprintf("%s/t%d", f.url, i), "text/plain", body); code != 202 {
			t.Fatalf("notification %d: %d", i, code)
		}
	}
	f.hub.mu.Lock()
	kept, n, last := f.hub.kept, len(f.hub.topics), f.hub.topics[f.url+"/t29"]
	f.hub.mu.Unlock()
	if kept > 20<<10 || n != 5 || last == nil {
		t.Errorf("%d bytes in %d topics kept (the last: %v), want at most %d", kept, n, last != nil, 20<<10)
	}
	f.restart()
	f.hub.mu.Lock()
	n = len(f.hub.topics)
	f.hub.mu.Unlock()
	if n != 5 {
		t.Errorf("%d topics kept after a restart, want 5", n)
	}
}

// hangingSubscribers are n subscribers on one server that answer the
// verification and never a delivery (until the test ends).
func hangingSubscribers(t *testing.T, f *fixture, topic string, n int) *atomic.Int32 {
	var posts atomic.Int32
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			io.WriteString(w, r.URL.Query().Get("hub.challenge"))
			return
		}
		posts.Add(1)
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) })
	for i := range n {
		// A verification that outlasts a short Timeout on a loaded
		// machine (-race, other tests) is tried again, as a subscriber
		// would: what is tested is the deliveries.
		e := f.subscribe(url.Values{"hub.topic": {topic}, "hub.callback": {fmt.Sprintf("%s/hang%d", srv.URL, i)}})
		for try := 1; e.Kind != Subscribed && try < 5; try++ {
			e = f.subscribe(url.Values{"hub.topic": {topic}, "hub.callback": {fmt.Sprintf("%s/hang%d", srv.URL, i)}})
		}
		if e.Kind != Subscribed {
			t.Fatalf("event %v (%v)", e.Kind, e.Err)
		}
	}
	return &posts
}

// TestSlowSubscribersDoNotStarve: 200 subscribers that never answer a
// delivery do not delay an honest one beyond a few seconds, with the
// hub's defaults; with a pool of 16 workers, once they have failed (and
// while they are retried) they hold at most a quarter of it, and the
// honest one's next deliveries go at once.
//
// Not parallel: its bounds are times, which a test beside it on the same
// cores stretches.
func TestSlowSubscribersDoNotStarve(t *testing.T) {
	for _, o := range []Options{{Timeout: DefaultTimeout}, {Deliveries: 16, Timeout: 200 * time.Millisecond, Attempts: 3, RetryWait: 50 * time.Millisecond}} {
		t.Run(fmt.Sprintf("%d workers", max(o.Deliveries, DefaultDeliveries*btoi(o.Deliveries == 0))), func(t *testing.T) {
			f := newFixture(t, o)
			topic := f.url + "/t"
			posts := hangingSubscribers(t, f, topic, 200)
			honest := newSubscriber(t)
			f.subscribe(url.Values{"hub.topic": {topic}, "hub.callback": {honest.callback("/cb")}})
			first := 3 * time.Second
			if o.Deliveries != 0 {
				first = wait // 200 tries of 200 ms on 16 workers may come first
			}
			for i, within := range []time.Duration{first, 2 * time.Second, 2 * time.Second} {
				if i == 1 && o.Deliveries != 0 {
					// Until each has failed once, nothing tells the others
					// from the honest one: wait for it.
					for deadline := time.Now().Add(wait); posts.Load() < 200 && time.Now().Before(deadline); {
						time.Sleep(10 * time.Millisecond)
					}
					time.Sleep(o.Timeout + 100*time.Millisecond)
				}
				start := time.Now()
				f.notify(topic, "text/plain", fmt.Sprint("n", i))
				select {
				case <-honest.arrived:
				case <-time.After(within):
					t.Fatalf("notification %d: the honest subscriber had nothing after %s (%d tries on the others)", i, within, posts.Load())
				}
				t.Logf("notification %d: delivered after %s", i, time.Since(start).Round(time.Millisecond))
			}
		})
	}
}

// TestQueuedBounded: content waiting for subscribers that do not answer
// is bounded in bytes, each content counted once: past the bound, new
// content is dropped for them.
func TestQueuedBounded(t *testing.T) {
	defer func(n int64) { maxQueued = n }(maxQueued)
	maxQueued = 10 << 10
	f := newFixture(t, Options{})
	topic := f.url + "/t"
	hangingSubscribers(t, f, topic, 3)
	for i := range 6 {
		f.notify(topic, "text/plain", strings.Repeat(fmt.Sprint(i), 3<<10))
	}
	f.hub.mu.Lock()
	queued := f.hub.queuedBytes
	f.hub.mu.Unlock()
	if queued > maxQueued {
		t.Errorf("%d bytes queued, want at most %d", queued, maxQueued)
	}
	if e := f.next(Dropped); !strings.Contains(e.Err.Error(), "bytes of content waiting") {
		t.Errorf("dropped: %v", e.Err)
	}
}
