package claim

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/rsdump/rsdump/internal/pause"
)

// WorkOptions say how Work goes through the jobs.
type WorkOptions struct {
	// Start is the index of the first job to try; the others follow in
	// order, wrapping around, so that workers given different starts
	// begin apart (worker K of N at job (K-1)*M/N) and rarely race.
	Start int
	// Parallel is how many jobs the worker holds at once; default 1.
	Parallel int
	// KeepGoing goes on to the next job after one fails; otherwise the
	// first failure ends Work.
	KeepGoing bool
	// Claimed is told of each job taken, before it is worked on.
	Claimed func(h *Held)
}

// Report is what Work did, and what it left.
type Report struct {
	Did    []string         // jobs this worker did, in the order they finished
	Failed map[string]error // jobs this worker gave up, with why
	Done   int              // jobs done on the board at the end, by any worker
	// Held are the jobs other workers held at the end, leases running:
	// each will be done by its holder, or taken over once its lease
	// passes, by a rerun of any worker.
	Held []*Record
	// Left are the jobs not done whose last claim's lease has passed (a
	// worker gave them up, or died): a rerun of any worker takes them.
	Left []*Record
}

// Work claims jobs one at a time (Parallel at once), in order from
// Start, and calls do for each, with a context that ends when the claim
// is lost; a job do finished is marked done, one it failed is released
// for another worker to try. It returns once no job is left to claim:
// every job done, held by a live worker, or tried here and failed.
//
// The board is listed once, then jobs that listing showed unclaimed are
// taken one after the other (a job taken since is lost in the race, at
// the cost of one exclusive create); only once those are used up is it
// listed again, to find jobs whose lease passed. Listing it for every job
// would cost the square of their number.
func (b *Board) Work(ctx context.Context, jobs []string, o WorkOptions, do func(context.Context, *Held) error) (*Report, error) {
	w := &worker{b: b, o: o, do: do, rep: &Report{Failed: map[string]error{}}}
	w.o.Parallel = max(w.o.Parallel, 1)
	w.slots = make(chan struct{}, w.o.Parallel)
	err := w.run(ctx, jobs)
	w.wg.Wait()
	if err == nil {
		err = w.firstErr()
	}
	if err != nil {
		return w.rep, err
	}
	return w.rep, w.finish(ctx, jobs)
}

type worker struct {
	b     *Board
	o     WorkOptions
	do    func(context.Context, *Held) error
	slots chan struct{}
	wg    sync.WaitGroup

	mu   sync.Mutex
	rep  *Report
	err  error           // the first failure, when not KeepGoing
	mine map[string]bool // jobs taken by this worker
}

func (w *worker) run(ctx context.Context, jobs []string) error {
	w.mine = map[string]bool{}
	for {
		all, err := w.b.Look(ctx)
		if err != nil {
			return err
		}
		cands, err := w.candidates(ctx, jobs, all)
		if err != nil || len(cands) == 0 {
			return err
		}
		took := 0
		for _, job := range cands {
			if err := w.acquire(ctx); err != nil {
				return err
			}
			h, err := w.b.Take(ctx, job, all[job])
			if err != nil {
				<-w.slots
				if errors.Is(err, ErrHeld) || errors.Is(err, ErrDone) {
					continue
				}
				return err
			}
			took++
			w.start(ctx, h)
		}
		if took == 0 {
			// Every candidate was taken by others since the listing: list
			// again only once they may have finished or let go.
			if err := pause.For(ctx, 100*time.Millisecond); err != nil {
				return err
			}
		}
	}
}

// acquire waits for a free slot, or for a failure that ends the work.
func (w *worker) acquire(ctx context.Context) error {
	select {
	case w.slots <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	if err := w.firstErr(); err != nil {
		<-w.slots
		return err
	}
	return nil
}

func (w *worker) firstErr() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// candidates are the jobs to try, in the worker's order: those no one
// claimed, or whose last claim's lease passed; not those this worker
// already took (done, failed, or under way).
func (w *worker) candidates(ctx context.Context, jobs []string, all map[string]*Status) ([]string, error) {
	var out []string
	n := len(jobs)
	for i := range n {
		job := jobs[(w.o.Start+i)%n]
		st := all[job]
		w.mu.Lock()
		mine := w.mine[job]
		w.mu.Unlock()
		switch {
		case mine || st != nil && st.Done:
			continue
		case st == nil || st.Gen == 0:
			out = append(out, job)
			continue
		}
		if err := w.b.Read(ctx, st); err != nil {
			return nil, err
		}
		if !w.b.now().Before(st.Last.Until) {
			out = append(out, job)
		}
	}
	return out, nil
}

// start works on a job taken, in a slot of its own.
func (w *worker) start(ctx context.Context, h *Held) {
	job := h.Record().Job
	w.mu.Lock()
	w.mine[job] = true
	w.mu.Unlock()
	if w.o.Claimed != nil {
		w.o.Claimed(h)
	}
	w.wg.Go(func() {
		defer func() { <-w.slots }()
		jctx, cancel := context.WithCancelCause(ctx)
		defer cancel(nil)
		stop := h.Keep(jctx, func(err error) { cancel(err) })
		err := w.do(jctx, h)
		stop()
		if err == nil {
			err = h.Done(context.WithoutCancel(ctx))
		}
		if err != nil && context.Cause(jctx) != nil && !errors.Is(context.Cause(jctx), context.Canceled) {
			err = fmt.Errorf("%w (%v)", err, context.Cause(jctx))
		}
		w.finished(ctx, h, job, err)
	})
}

func (w *worker) finished(ctx context.Context, h *Held, job string, err error) {
	if err != nil {
		h.Release(context.WithoutCancel(ctx), err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if err == nil {
		w.rep.Did = append(w.rep.Did, job)
		return
	}
	w.rep.Failed[job] = err
	if !w.o.KeepGoing && w.err == nil {
		w.err = err
	}
}

// finish counts what the board holds at the end: jobs done, and those
// others hold.
func (w *worker) finish(ctx context.Context, jobs []string) error {
	all, err := w.b.Look(ctx)
	if err != nil {
		return err
	}
	for _, job := range jobs {
		st := all[job]
		switch {
		case st == nil:
		case st.Done:
			w.rep.Done++
		case st.Gen > 0:
			if err := w.b.Read(ctx, st); err != nil {
				return err
			}
			if w.b.now().Before(st.Last.Until) {
				w.rep.Held = append(w.rep.Held, st.Last)
			} else {
				w.rep.Left = append(w.rep.Left, st.Last)
			}
		}
	}
	sort.Slice(w.rep.Held, func(i, j int) bool { return w.rep.Held[i].Job < w.rep.Held[j].Job })
	return nil
}
