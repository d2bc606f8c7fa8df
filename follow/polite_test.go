package follow

import (
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rsdump/rsdump/websub"
)

// TestShortLeaseRenewedPolitely: a hub that grants a lease of a second
// is not asked every second: the renewal waits MinRenew (a minute by
// default), so that in 3 s each channel is subscribed once.
func TestShortLeaseRenewedPolitely(t *testing.T) {
	t.Parallel()
	s := newSource(t, websub.Options{MinLease: time.Second, Lease: time.Second, MaxLease: time.Second})
	ev, _ := follow(t, s, Options{})
	subs := ev.waitFor(t, "subscriptions", 2, func(e Event) bool { return e.Kind == Subscribed })
	if subs[0].Lease != time.Second {
		t.Fatalf("lease %s, want the hub's 1s", subs[0].Lease)
	}
	time.Sleep(3 * time.Second)
	ev.mu.Lock()
	n := 0
	for _, e := range ev.all {
		if e.Kind == Subscribed {
			n++
		}
	}
	ev.mu.Unlock()
	if n != 2 {
		t.Errorf("%d subscriptions and renewals in 3 s with a lease of 1 s, want 2 (one per channel)", n)
	}
}

// hubRequests counts the requests to the hub's URL a source's handler
// sees, by topic, with their times, and answers them with answer
// instead of the hub when it is set.
type hubRequests struct {
	mu     sync.Mutex
	times  map[string][]time.Time
	answer func(w http.ResponseWriter) // nil: the hub answers
}

func (h *hubRequests) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/hub") && r.FormValue("hub.mode") == "subscribe" {
			h.mu.Lock()
			h.times[r.FormValue("hub.topic")] = append(h.times[r.FormValue("hub.topic")], time.Now())
			answer := h.answer
			h.mu.Unlock()
			if answer != nil {
				answer(w)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// TestPollWhileHubNeverVerifies: a hub that accepts the subscriptions
// and never verifies them does not stop --poll's syncs: they go on while
// the subscriptions wait for their verification.
func TestPollWhileHubNeverVerifies(t *testing.T) {
	t.Parallel()
	h := &hubRequests{times: map[string][]time.Time{}, answer: func(w http.ResponseWriter) { w.WriteHeader(http.StatusAccepted) }}
	s := newSourceWith(t, websub.Options{}, true, h.wrap)
	ev, _ := follow(t, s, Options{Poll: 200 * time.Millisecond})
	start := time.Now()
	ev.waitFor(t, "syncs by poll", 4, func(e Event) bool { return e.Kind == Synced && e.Why == "poll" })
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("4 polls took %s, want about 800 ms", d)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.times) != 2 {
		t.Errorf("subscription requests for %d topics, want 2", len(h.times))
	}
}

// TestSubscribeBackoff: a hub that refuses is asked again after Retry,
// then twice as long after each failure in a row.
func TestSubscribeBackoff(t *testing.T) {
	t.Parallel()
	h := &hubRequests{times: map[string][]time.Time{}, answer: func(w http.ResponseWriter) { http.Error(w, "no", http.StatusForbidden) }}
	s := newSourceWith(t, websub.Options{}, true, h.wrap)
	ev, _ := follow(t, s, Options{Retry: 100 * time.Millisecond, Poll: time.Hour})
	ev.waitFor(t, "failed subscriptions", 8, func(e Event) bool { return e.Kind == SubscribeFailed })
	time.Sleep(1500 * time.Millisecond)
	h.mu.Lock()
	defer h.mu.Unlock()
	for topic, times := range h.times {
		// Retry 100 ms doubling: tries at about 0, 0.1, 0.3, 0.7, 1.5, 3.1 s;
		// without the doubling, one every 100 ms.
		if len(times) < 4 || len(times) > 6 {
			t.Errorf("%s: %d requests, want 4 to 6", topic, len(times))
		}
		for i := 2; i < len(times); i++ {
			if gap, before := times[i].Sub(times[i-1]), times[i-1].Sub(times[i-2]); gap < before*3/2 {
				t.Errorf("%s: request %d came %s after the one before, which came %s after its own: the wait did not grow", topic, i, gap, before)
			}
		}
	}
}
