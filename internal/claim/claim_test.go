package claim

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rsdump/rsdump/internal/httpc"
	"github.com/rsdump/rsdump/internal/s3test"
	"github.com/rsdump/rsdump/internal/sink"
	"github.com/rsdump/rsdump/s3"
)

// clock is a time the test moves.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func dirStore(t *testing.T) Store {
	s, err := sink.OpenDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func bucketStore(t *testing.T) (Store, *s3test.Proxy, context.Context) {
	srv := s3test.Start(t)
	bucket := srv.Bucket(t, "claims")
	p := srv.NewProxy(t)
	ctx := s3.WithConfig(context.Background(), s3.Config{Endpoint: p.URL})
	b, err := sink.OpenBucket(ctx, "s3://"+bucket+"/out", httpc.Default())
	if err != nil {
		t.Fatal(err)
	}
	return b, p, ctx
}

func board(s Store, worker string, c *clock) *Board {
	b := &Board{Store: s, Dir: ".rsdump-claims/", Worker: worker, Lease: time.Minute}
	if c != nil {
		b.Now = c.now
	}
	return b
}

// race has n workers take one job at once: exactly one must win, and
// every other is told who holds it.
func race(t *testing.T, ctx context.Context, s Store, n int) {
	var wg sync.WaitGroup
	won := make(chan *Held, n)
	held := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			h, err := board(s, fmt.Sprintf("worker %d", i+1), nil).Take(ctx, "shard03of16", nil)
			if err != nil {
				held <- err
				return
			}
			won <- h
		})
	}
	wg.Wait()
	close(won)
	close(held)
	if len(won) != 1 {
		t.Fatalf("%d workers won the job, want 1", len(won))
	}
	winner := (<-won).Record()
	for err := range held {
		var he *HeldError
		if !errors.As(err, &he) || !errors.Is(err, ErrHeld) {
			t.Errorf("a loser's error: %v, want a HeldError", err)
			continue
		}
		if he.Rec.Gen != 1 || he.Rec.Worker != winner.Worker {
			t.Errorf("a loser is told %s (generation %d) holds it, not %s", he.Rec.Worker, he.Rec.Gen, winner.Worker)
		}
	}
	all, err := board(s, "", nil).Look(ctx)
	if err != nil || all["shard03of16"] == nil || all["shard03of16"].Gen != 1 || len(all) != 1 {
		t.Errorf("the board after the race: %v, %v", all, err)
	}
}

func TestRaceOneWinnerDir(t *testing.T) {
	t.Parallel()
	race(t, context.Background(), dirStore(t), 12)
}

// On S3 the exclusive create is a PUT with If-None-Match: *, which
// VersityGW honours (its posix backend checks it again under the object's
// publish lock).
func TestRaceOneWinnerS3(t *testing.T) {
	s, _, ctx := bucketStore(t)
	if err := Probe(ctx, s, ".rsdump-claims/"); err != nil {
		t.Fatalf("probe of VersityGW: %v", err)
	}
	race(t, ctx, s, 8)
}

// A server that answers a conditional PUT on an existing key as if it
// took it is found by the probe, and a claim there refused, with an
// error that says why.
func TestProbeFindsIgnoredCondition(t *testing.T) {
	s, p, ctx := bucketStore(t)
	p.IgnoreConditions.Store(true)
	err := Probe(ctx, s, ".rsdump-claims/")
	if !errors.Is(err, ErrNotExclusive) || !strings.Contains(err.Error(), "s3://claims/out/.rsdump-claims/") || !strings.Contains(err.Error(), "If-None-Match") {
		t.Fatalf("probe through a server ignoring If-None-Match: %v", err)
	}
	n := 0
	s.List(ctx, ".rsdump-claims/", func(sink.Info) error { n++; return nil })
	if n != 0 {
		t.Errorf("the probe left %d objects", n)
	}
}

// A worker that dies leaves its claim: another cannot take the job before
// the lease passes, and takes it over after, as the claim's next
// generation; the first, should it wake, finds it lost and cannot renew.
func TestTakeOverAfterLease(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := dirStore(t)
	c := &clock{t: time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)}
	a, b := board(s, "task 1", c), board(s, "task 2", c)
	ha, err := a.Take(ctx, "part", nil)
	if err != nil {
		t.Fatal(err)
	}
	c.add(30 * time.Second)
	if _, err := b.Take(ctx, "part", nil); !errors.Is(err, ErrHeld) || !strings.Contains(err.Error(), "held by task 1") {
		t.Fatalf("taking a job before its lease passed: %v", err)
	}
	c.add(31 * time.Second)
	hb, err := b.Take(ctx, "part", nil)
	if err != nil {
		t.Fatalf("taking over after the lease: %v", err)
	}
	if rec := hb.Record(); rec.Gen != 2 || hb.From == nil || hb.From.Worker != "task 1" {
		t.Errorf("the takeover: generation %d, from %v", rec.Gen, hb.From)
	}
	if err := ha.Renew(ctx); !errors.Is(err, ErrLost) {
		t.Errorf("the first holder renewed after its lease passed: %v", err)
	}
	// Its lease passed: it is lost even had no one taken over.
	if err := hb.Renew(ctx); err != nil {
		t.Fatal(err)
	}
	c.add(50 * time.Second)
	if err := hb.Renew(ctx); err != nil {
		t.Fatalf("a renewal within the lease: %v", err)
	}
	c.add(59 * time.Second)
	if _, err := a.Take(ctx, "part", nil); !errors.Is(err, ErrHeld) {
		t.Fatalf("renewed lease not honoured: %v", err)
	}
	if err := hb.Done(ctx); err != nil {
		t.Fatal(err)
	}
	c.add(time.Hour)
	if _, err := a.Take(ctx, "part", nil); !errors.Is(err, ErrDone) {
		t.Fatalf("taking a job done: %v", err)
	}
}

// A holder that finds a later generation of its claim while it keeps it
// is told it lost it, and stops renewing.
func TestKeepReportsLoss(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := dirStore(t)
	a := board(s, "task 1", nil)
	a.Lease = 400 * time.Millisecond
	ha, err := a.Take(ctx, "part", nil)
	if err != nil {
		t.Fatal(err)
	}
	lost := make(chan error, 1)
	stop := ha.Keep(ctx, func(err error) { lost <- err })
	defer stop()
	// Kept, the lease holds well past its length.
	time.Sleep(1000 * time.Millisecond)
	if _, err := board(s, "task 2", nil).Take(ctx, "part", nil); !errors.Is(err, ErrHeld) {
		t.Fatalf("a kept claim was taken: %v", err)
	}
	// A later generation, as a worker whose clock ran ahead would write.
	if err := s.WriteNew(ctx, a.genName("part", 2), []byte(`{"job":"part","gen":2,"worker":"task 9"}`)); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-lost:
		if !errors.Is(err, ErrLost) || !strings.Contains(err.Error(), "task 9") {
			t.Errorf("lost: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the loss was not reported within 5 s")
	}
}

// A job given up after a failure is free at once, and its next holder
// learns why the last failed.
func TestReleaseAfterFailure(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := dirStore(t)
	c := &clock{t: time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)}
	h, err := board(s, "task 1", c).Take(ctx, "pkg", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Release(ctx, errors.New("a bitstream did not verify")); err != nil {
		t.Fatal(err)
	}
	c.add(time.Millisecond)
	h2, err := board(s, "task 2", c).Take(ctx, "pkg", nil)
	if err != nil {
		t.Fatalf("taking a released job: %v", err)
	}
	if h2.From == nil || h2.From.Failed != "a bitstream did not verify" {
		t.Errorf("the next holder took over from %+v", h2.From)
	}
	if err := board(s, "", c).Clear(ctx); err != nil {
		t.Fatal(err)
	}
	if all, _ := board(s, "", c).Look(ctx); len(all) != 0 {
		t.Errorf("after Clear: %v", all)
	}
}

func TestParseName(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]struct {
		job string
		gen int
		ok  bool
	}{
		"shard03of16.claim-000002": {"shard03of16", 2, true},
		"shard03of16.done":         {"shard03of16", 0, true},
		"probe-0011":               {"", 0, false},
		".claim-000001":            {"", 0, false},
		"a/b.done":                 {"", 0, false},
		"x.claim-0":                {"", 0, false},
	} {
		job, gen, ok := parseName(name)
		if job != want.job || gen != want.gen || ok != want.ok {
			t.Errorf("parseName(%q) = %q, %d, %v", name, job, gen, ok)
		}
	}
}

// Three workers share twenty jobs: each is done exactly once, by one of
// them, and each worker's report adds up to the whole. A job left by a
// dead worker is taken over once its lease passed, by a worker run again.
func TestWorkShares(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := dirStore(t)
	var jobs []string
	for i := range 20 {
		jobs = append(jobs, fmt.Sprintf("job%02d", i))
	}
	// A dead worker's claim on job07. The board's clock stands still
	// while the workers run, so its lease cannot pass under them however
	// slow the machine; it is moved past the lease for the rerun.
	c := &clock{t: time.Now()}
	dead := board(s, "dead", c)
	if _, err := dead.Take(ctx, "job07", nil); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	count := map[string]int{}
	do := func(ctx context.Context, h *Held) error {
		time.Sleep(5 * time.Millisecond)
		mu.Lock()
		count[h.Record().Job]++
		mu.Unlock()
		if h.Record().Job == "job13" && h.From == nil {
			return errors.New("job13 fails the first time")
		}
		return nil
	}
	var wg sync.WaitGroup
	reps := make([]*Report, 3)
	for k := range 3 {
		wg.Go(func() {
			var err error
			reps[k], err = board(s, fmt.Sprintf("task %d", k+1), c).Work(ctx, jobs, WorkOptions{Start: k * 20 / 3, Parallel: 2, KeepGoing: true}, do)
			if err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	did := 0
	for _, r := range reps {
		did += len(r.Did)
	}
	// job13 failed once, was released, and another worker did it.
	if did != 19 || count["job07"] != 0 || count["job13"] != 2 {
		t.Fatalf("%d jobs done; job07 done %d times, job13 tried %d times", did, count["job07"], count["job13"])
	}
	for _, j := range jobs {
		if j != "job07" && j != "job13" && count[j] != 1 {
			t.Errorf("%s done %d times", j, count[j])
		}
	}
	all, _ := board(s, "", c).Look(ctx)
	for _, j := range jobs {
		if all[j] == nil || all[j].Done != (j != "job07") {
			t.Errorf("%s on the board: %+v", j, all[j])
		}
	}
	// A rerun, after the dead worker's lease: job07 taken over.
	c.add(2 * time.Minute)
	rep, err := board(s, "task 1 again", c).Work(ctx, jobs, WorkOptions{}, do)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Did) != 1 || rep.Done != 20 || len(rep.Held) != 0 || count["job07"] != 1 {
		t.Errorf("the rerun: did %v, %d done, held %v", rep.Did, rep.Done, rep.Held)
	}
}
