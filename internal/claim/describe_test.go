package claim

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestOnceMakesOnce: of workers calling Once at the same time, one makes
// the plan; the others wait and read it, never make it again.
func TestOnceMakesOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := dirStore(t)
	var mu sync.Mutex
	var plan *string
	read := func() (*string, error) { mu.Lock(); defer mu.Unlock(); return plan, nil }
	var made atomic.Int32
	mk := func(ctx context.Context, h *Held) (*string, error) {
		made.Add(1)
		time.Sleep(100 * time.Millisecond) // the others poll meanwhile
		p := "plan by " + h.Record().Worker
		mu.Lock()
		plan = &p
		mu.Unlock()
		return &p, h.Done(ctx)
	}
	got := make([]string, 4)
	var wg sync.WaitGroup
	for k := range got {
		wg.Go(func() {
			b := board(s, "w"+string(rune('a'+k)), nil)
			b.Lease = time.Second
			p, err := Once(ctx, b, "plan", read, func(*string) error { return nil }, mk)
			if err != nil || p == nil {
				t.Errorf("worker %d: %v, %v", k, p, err)
				return
			}
			got[k] = *p
		})
	}
	wg.Wait()
	if made.Load() != 1 {
		t.Fatalf("made %d times, want once", made.Load())
	}
	for k, p := range got {
		if p != got[0] {
			t.Errorf("worker %d read %q, worker 0 %q", k, p, got[0])
		}
	}
}

// TestOnceGoneAndChecked: a plan job done whose plan is no longer there is
// ErrGone; a plan found is checked, and make failing releases the job.
func TestOnceGoneAndChecked(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := board(dirStore(t), "w", nil)
	none := func() (*int, error) { return nil, nil }
	ok := func(*int) error { return nil }
	failing := errors.New("walk failed")
	_, err := Once(ctx, b, "plan", none, ok, func(context.Context, *Held) (*int, error) { return nil, failing })
	if !errors.Is(err, failing) {
		t.Fatalf("err = %v, want the make's failure", err)
	}
	all, err := b.Look(ctx)
	if err != nil {
		t.Fatal(err)
	}
	why, err := b.NotDone(ctx, all["plan"])
	if err != nil || !strings.Contains(why, "gave it up: walk failed") {
		t.Fatalf("after a failed make: %q, %v; want the job released with why", why, err)
	}
	h, err := b.Take(ctx, "plan", nil)
	if err != nil {
		t.Fatalf("a released job is taken at once: %v", err)
	}
	if err := h.Done(ctx); err != nil {
		t.Fatal(err)
	}
	never := func(context.Context, *Held) (*int, error) { t.Error("make called on a done job"); return nil, nil }
	if _, err := Once(ctx, b, "plan", none, ok, never); !errors.Is(err, ErrGone) {
		t.Fatalf("done job, nothing to read: err = %v, want ErrGone", err)
	}
	n := 7
	wrong := errors.New("planned with other options")
	found := func() (*int, error) { return &n, nil }
	if _, err := Once(ctx, b, "plan", found, func(*int) error { return wrong }, never); !errors.Is(err, wrong) {
		t.Fatalf("err = %v, want the check's refusal", err)
	}
}

// TestNotDoneSays: the words for a job unclaimed, held and left.
func TestNotDoneSays(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := &clock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	b := board(dirStore(t), "w1", c)
	if why, _ := b.NotDone(ctx, nil); why != "unclaimed" {
		t.Errorf("never claimed: %q", why)
	}
	if _, err := b.Take(ctx, "j", nil); err != nil {
		t.Fatal(err)
	}
	all, _ := b.Look(ctx)
	if why, err := b.NotDone(ctx, all["j"]); err != nil || !strings.HasPrefix(why, "held by w1") || !strings.Contains(why, "lease until 2026-01-02T03:05:05Z") {
		t.Errorf("held: %q, %v", why, err)
	}
	c.add(2 * time.Minute)
	all, _ = b.Look(ctx)
	if why, err := b.NotDone(ctx, all["j"]); err != nil || !strings.Contains(why, "w1") || !strings.Contains(why, "stopped; lease passed at 2026-01-02T03:05:05Z") {
		t.Errorf("left: %q, %v", why, err)
	}
}
