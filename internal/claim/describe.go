package claim

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rsdump/rsdump/internal/pause"
)

// ErrGone is Once's job done whose result read no longer finds: the run
// that made it ended (a merge removed it), and the board must be cleared
// before the jobs are shared again.
var ErrGone = errors.New("the job is done and what it made is gone")

// Once returns what read finds, or, while no one has made it, what make
// makes under job's claim: of the workers calling Once, the first to
// claim job makes it (the plan of a sharded run); the others poll read
// until it is there, and take the job over if its maker's lease passes
// first; make runs with a context that ends when the claim is lost, the
// claim kept meanwhile and released when make fails, and marks the job
// done itself once what it made is stored. read returns nil, nil for "not there yet"; check refuses what
// read found when another run made it (with other options, of another
// dump).
func Once[T any](ctx context.Context, b *Board, job string, read func() (*T, error), check func(*T) error, make func(context.Context, *Held) (*T, error)) (*T, error) {
	poll := min(time.Second, max(b.Lease/10, 50*time.Millisecond))
	for {
		v, err := read()
		if err != nil {
			return nil, err
		}
		if v != nil {
			return v, check(v)
		}
		h, err := b.Take(ctx, job, nil)
		switch {
		case err == nil:
			return hold(ctx, h, make)
		case errors.Is(err, ErrDone):
			return nil, fmt.Errorf("%s: %w", job, ErrGone)
		case !errors.Is(err, ErrHeld):
			return nil, err
		}
		if err := pause.For(ctx, poll); err != nil {
			return nil, err
		}
	}
}

// hold runs make under h, kept while it runs, released when it fails.
func hold[T any](ctx context.Context, h *Held, make func(context.Context, *Held) (*T, error)) (v *T, err error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stop := h.Keep(ctx, func(err error) { cancel(err) })
	defer func() {
		stop()
		if err != nil {
			h.Release(context.WithoutCancel(ctx), err)
		}
	}()
	return make(ctx, h)
}

// Left says how a claim's holder left its job: gave it up (and why), or
// stopped and let its lease pass.
func (r *Record) Left() string {
	if r.Failed != "" {
		return fmt.Sprintf("%s gave it up: %s", r, r.Failed)
	}
	return fmt.Sprintf("%s stopped; lease passed at %s", r, r.Until.UTC().Format(time.RFC3339))
}

// NotDone says why a job whose status st a Look gave (nil: never
// claimed) is not done: unclaimed, held (by whom, until when), or left.
func (b *Board) NotDone(ctx context.Context, st *Status) (string, error) {
	if st == nil {
		return "unclaimed", nil
	}
	if err := b.Read(ctx, st); err != nil {
		return "", err
	}
	if !b.now().Before(st.Last.Until) {
		return st.Last.Left(), nil
	}
	return "held by " + st.Last.String() + ", lease until " + st.Last.Until.UTC().Format(time.RFC3339), nil
}

// Describe lists the report's held and left jobs in words, each job
// named by name, for a worker's report.
func (r *Report) Describe(name func(job string) string) (held, left []string) {
	for _, rec := range r.Held {
		held = append(held, fmt.Sprintf("%s (%s, until %s)", name(rec.Job), rec, rec.Until.UTC().Format(time.RFC3339)))
	}
	for _, rec := range r.Left {
		left = append(left, fmt.Sprintf("%s (%s)", name(rec.Job), rec.Left()))
	}
	return held, left
}
