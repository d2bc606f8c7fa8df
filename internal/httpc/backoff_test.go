package httpc

import (
	"testing"
	"time"
)

// Backoff.Wait doubles from Base to Max, jittered between half and all
// of it, and never waits less than a Retry-After, itself capped.
func TestBackoffWait(t *testing.T) {
	t.Parallel()
	b := Backoff{Base: 100 * time.Millisecond, Max: time.Second, MaxAfter: time.Minute}
	for n, want := range []time.Duration{100, 200, 400, 800, 1000, 1000} {
		if got := b.Wait(n, 0); got != want*time.Millisecond {
			t.Errorf("Wait(%d) = %v, want %v", n, got, want*time.Millisecond)
		}
	}
	if got := b.Wait(100, 0); got != time.Second {
		t.Errorf("Wait(100) = %v, want Max", got)
	}
	if got := b.Wait(0, 30*time.Second); got != 30*time.Second {
		t.Errorf("Retry-After 30s: %v", got)
	}
	if got := b.Wait(0, time.Hour); got != time.Minute {
		t.Errorf("Retry-After 1h: %v, want MaxAfter", got)
	}
	if got := (Backoff{Base: time.Second, Max: 2 * time.Second}).Wait(0, time.Hour); got != 2*time.Second {
		t.Errorf("Retry-After 1h, no MaxAfter: %v, want Max", got)
	}
	b.Jitter = true
	seen := map[time.Duration]bool{}
	for range 50 {
		d := b.Wait(2, 0)
		if d < 200*time.Millisecond || d > 400*time.Millisecond {
			t.Fatalf("jittered Wait(2) = %v, want in [200ms, 400ms]", d)
		}
		seen[d] = true
	}
	if len(seen) < 2 {
		t.Error("no jitter")
	}
}
