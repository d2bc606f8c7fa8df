// Package claim shares jobs (the parts of a sharded pack, the packages of
// a sharded restore) between workers that may run on many machines and
// die at any time, through nothing but a shared store: a directory (NFS,
// Lustre, a local disk) or an S3 prefix (internal/sink).
//
// A worker claims a job by creating its claim under a name no one holds,
// atomically (sink's WriteNew: a hard link on disk, a PUT with
// If-None-Match: * on S3), so that of workers racing for a job exactly one
// wins. A claim records who holds it and until when (its lease); the
// holder renews the lease while it works and, when done, writes the job's
// done marker. A worker that dies leaves its claim; once the lease has
// passed, any worker may take the job over, by creating the claim's next
// generation, under its own name, with the same exclusive create: the
// holder of a job is the holder of its latest generation. A holder that
// finds a later generation, or lets its own lease pass without renewing
// it, has lost the job and stops (Held.Keep).
//
// Leases are compared with each machine's clock: the machines must agree
// on the time to well within a lease (NTP does).
package claim

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rsdump/rsdump/internal/sink"
)

// Store is what the claims need of a sink.
type Store interface {
	Loc(name string) string
	WriteNew(ctx context.Context, name string, data []byte) error
	WriteFile(ctx context.Context, name string, data []byte) error
	Open(ctx context.Context, name string) (io.ReadCloser, error)
	List(ctx context.Context, prefix string, fn func(sink.Info) error) error
	Remove(ctx context.Context, name string) error
}

// DefaultLease is how long a claim holds without renewal.
const DefaultLease = 5 * time.Minute

// Board is the claims of one set of jobs, under Dir in Store.
type Board struct {
	Store  Store
	Dir    string        // prefix of the claims' names, ending in "/"
	Worker string        // who claims, as claims record it: "slurm task 3 of 4 (job 812)"
	Lease  time.Duration // DefaultLease when 0
	Now    func() time.Time
}

// Record is a claim as stored: one generation of a job's claim.
type Record struct {
	Job     string    `json:"job"`
	Gen     int       `json:"gen"`
	Worker  string    `json:"worker"`
	Host    string    `json:"host"`
	PID     int       `json:"pid"`
	Claimed time.Time `json:"claimed"`
	// Until is the lease: after it, another worker may take the job over.
	Until time.Time `json:"until"`
	// Failed says why the holder gave the job up (its lease then ended at
	// once, for another worker, or a rerun, to try again).
	Failed string `json:"failed,omitempty"`
}

func (r Record) String() string {
	s := r.Worker
	if s == "" {
		return fmt.Sprintf("pid %d on %s", r.PID, r.Host)
	}
	if r.Host != "" {
		s += fmt.Sprintf(" on %s, pid %d", r.Host, r.PID)
	}
	return s
}

// Status is a job as the board shows it.
type Status struct {
	Job  string
	Done bool
	Gen  int     // the latest generation of its claim; 0 when unclaimed
	Last *Record // that generation, once read (Look does not read it)
}

// Errors of Take.
var (
	ErrDone = errors.New("the job is done")
	// ErrHeld is a job another worker holds: its lease has not passed, or
	// it won the race for the job.
	ErrHeld = errors.New("the job is held by another worker")
	// ErrLost is a holder that lost its job: a later generation exists, or
	// its lease passed before it could renew it.
	ErrLost = errors.New("the claim was lost")
)

// HeldError is ErrHeld with the claim that holds the job.
type HeldError struct{ Rec *Record }

func (e *HeldError) Error() string {
	return fmt.Sprintf("%s is held by %s until %s", e.Rec.Job, e.Rec, e.Rec.Until.UTC().Format(time.RFC3339))
}
func (e *HeldError) Unwrap() error { return ErrHeld }

func (b *Board) now() time.Time {
	if b.Now != nil {
		return b.Now()
	}
	return time.Now()
}

func (b *Board) lease() time.Duration { return cmp.Or(b.Lease, DefaultLease) }

// genName is generation gen of job's claim; doneName its done marker.
func (b *Board) genName(job string, gen int) string {
	return fmt.Sprintf("%s%s.claim-%06d", b.Dir, job, gen)
}
func (b *Board) doneName(job string) string { return b.Dir + job + ".done" }

// Look lists the board once: every job with a claim or a done marker.
func (b *Board) Look(ctx context.Context) (map[string]*Status, error) {
	out := map[string]*Status{}
	err := b.Store.List(ctx, b.Dir, func(in sink.Info) error {
		name := strings.TrimPrefix(in.Name, b.Dir)
		job, gen, ok := parseName(name)
		if !ok {
			return nil
		}
		st := out[job]
		if st == nil {
			st = &Status{Job: job}
			out[job] = st
		}
		if gen == 0 {
			st.Done = true
		} else {
			st.Gen = max(st.Gen, gen)
		}
		return nil
	})
	return out, err
}

// parseName reads a claim's name, "JOB.claim-000003", or a done marker's,
// "JOB.done" (gen 0).
func parseName(name string) (job string, gen int, ok bool) {
	if j, ok := strings.CutSuffix(name, ".done"); ok && j != "" && !strings.Contains(j, "/") {
		return j, 0, true
	}
	i := strings.LastIndex(name, ".claim-")
	if i <= 0 || strings.Contains(name[:i], "/") {
		return "", 0, false
	}
	n, err := strconv.Atoi(name[i+len(".claim-"):])
	if err != nil || n < 1 {
		return "", 0, false
	}
	return name[:i], n, true
}

// Read reads the latest claim of a job Look found claimed, into st.Last.
func (b *Board) Read(ctx context.Context, st *Status) error {
	if st.Gen == 0 || st.Last != nil {
		return nil
	}
	rec, err := b.readGen(ctx, st.Job, st.Gen)
	st.Last = rec
	return err
}

func (b *Board) readGen(ctx context.Context, job string, gen int) (*Record, error) {
	rc, err := b.Store.Open(ctx, b.genName(job, gen))
	if err != nil {
		return nil, err
	}
	data, err := io.ReadAll(io.LimitReader(rc, 64<<10))
	rc.Close()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", b.Store.Loc(b.genName(job, gen)), err)
	}
	var rec Record
	if err := json.Unmarshal(data, &rec); err != nil {
		return nil, fmt.Errorf("%s: %w", b.Store.Loc(b.genName(job, gen)), err)
	}
	return &rec, nil
}

// Take claims job, whose status st (nil: unknown) a Look gave: when it
// is unclaimed, or its latest claim's lease has passed. It is ErrDone
// for a job done, a HeldError for one held, or lost in a race.
func (b *Board) Take(ctx context.Context, job string, st *Status) (*Held, error) {
	if st == nil {
		all, err := b.Look(ctx)
		if err != nil {
			return nil, err
		}
		st = cmp.Or(all[job], &Status{Job: job})
	}
	if st.Done {
		return nil, ErrDone
	}
	if err := b.Read(ctx, st); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	if st.Last != nil && b.now().Before(st.Last.Until) {
		return nil, &HeldError{st.Last}
	}
	host, _ := os.Hostname()
	now := b.now()
	rec := &Record{Job: job, Gen: st.Gen + 1, Worker: b.Worker, Host: host, PID: os.Getpid(), Claimed: now, Until: now.Add(b.lease())}
	data, _ := json.Marshal(rec)
	err := b.Store.WriteNew(ctx, b.genName(job, rec.Gen), data)
	if errors.Is(err, fs.ErrExist) {
		// Another worker created this generation first.
		won, rerr := b.readGen(ctx, job, rec.Gen)
		if rerr != nil {
			won = &Record{Job: job, Gen: rec.Gen, Worker: "another worker", Until: now}
		}
		return nil, &HeldError{won}
	}
	if err != nil {
		return nil, err
	}
	h := &Held{b: b, rec: *rec}
	if st.Last != nil {
		h.From = st.Last
	}
	return h, nil
}

// Held is a job this worker holds.
type Held struct {
	b    *Board
	mu   sync.Mutex
	rec  Record
	lost error
	// From is the claim this one took over (its lease had passed), or nil
	// for a job no one claimed before.
	From *Record
}

// Record is the claim as last written.
func (h *Held) Record() Record {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.rec
}

// Renew extends the lease, unless a later generation exists (ErrLost) or
// the lease has passed already, when another worker may be taking over
// the job.
func (h *Held) Renew(ctx context.Context) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.lost != nil {
		return h.lost
	}
	now := h.b.now()
	if !now.Before(h.rec.Until) {
		h.lost = fmt.Errorf("%s: %w: its lease passed at %s before it was renewed", h.rec.Job, ErrLost, h.rec.Until.UTC().Format(time.RFC3339))
		return h.lost
	}
	if err := h.checkLatest(ctx); err != nil {
		return err
	}
	rec := h.rec
	rec.Until = now.Add(h.b.lease())
	data, _ := json.Marshal(rec)
	if err := h.b.Store.WriteFile(ctx, h.b.genName(rec.Job, rec.Gen), data); err != nil {
		return err
	}
	h.rec = rec
	return nil
}

// checkLatest is ErrLost when a later generation of the claim exists:
// the next one, since a generation is only ever created over the one
// before it. One read, not a listing of the board.
func (h *Held) checkLatest(ctx context.Context) error {
	next, err := h.b.readGen(ctx, h.rec.Job, h.rec.Gen+1)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case next == nil && err != nil && !strings.Contains(err.Error(), "json"):
		return err
	}
	by := "another worker"
	if next != nil {
		by = next.String()
	}
	h.lost = fmt.Errorf("%s: %w: taken over by %s", h.rec.Job, ErrLost, by)
	return h.lost
}

// Keep renews the lease every third of it until stop is called, and
// calls lost (once) when the claim is lost: the caller then stops working
// on the job. A renewal that fails for another reason (the store did not
// answer) is tried again at the next tick, until the lease passes.
func (h *Held) Keep(ctx context.Context, lost func(error)) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(max(h.b.lease()/3, time.Millisecond))
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			if err := h.Renew(ctx); errors.Is(err, ErrLost) {
				lost(err)
				return
			}
		}
	}()
	return func() { cancel(); <-done }
}

// Done marks the job done, once its work is durably stored. The marker
// is written even by a holder that just lost the job: the work is done
// either way, and its record (a journal, a log) is what counts.
func (h *Held) Done(ctx context.Context) error {
	rec := h.Record()
	data, _ := json.Marshal(rec)
	return h.b.Store.WriteFile(ctx, h.b.doneName(rec.Job), data)
}

// Release gives the job up after a failure: the lease ends now, so that
// another worker, or a rerun, takes it over at once, and the claim says
// why. A claim lost already is left to its new holder.
func (h *Held) Release(ctx context.Context, why error) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.lost != nil {
		return nil
	}
	if err := h.checkLatest(ctx); err != nil {
		return nil
	}
	rec := h.rec
	rec.Until = h.b.now()
	if why != nil {
		rec.Failed = why.Error()
	}
	data, _ := json.Marshal(rec)
	h.rec = rec
	return h.b.Store.WriteFile(ctx, h.b.genName(rec.Job, rec.Gen), data)
}

// Clear removes every claim and done marker of the board.
func (b *Board) Clear(ctx context.Context) error {
	var names []string
	if err := b.Store.List(ctx, b.Dir, func(in sink.Info) error { names = append(names, in.Name); return nil }); err != nil {
		return err
	}
	var errs []error
	for _, n := range names {
		errs = append(errs, b.Store.Remove(ctx, n))
	}
	// A directory's, once empty; nothing on S3.
	errs = append(errs, b.Store.Remove(ctx, strings.TrimSuffix(b.Dir, "/")))
	return errors.Join(errs...)
}

// ErrNotExclusive is a store that let a second exclusive create of one
// name through: an S3 server that ignores If-None-Match: *. Claims there
// would not be exclusive, and two workers could pack one part.
var ErrNotExclusive = errors.New("the store does not refuse a second exclusive create of one name (an S3 server that ignores If-None-Match: *): claims cannot be made there")

// Probe checks that the store refuses a second exclusive create of one
// name, with a name of its own under dir, removed after.
func Probe(ctx context.Context, s Store, dir string) error {
	var r [8]byte
	rand.Read(r[:])
	name := dir + "probe-" + hex.EncodeToString(r[:])
	if err := s.WriteNew(ctx, name, []byte("probe\n")); err != nil {
		return err
	}
	defer s.Remove(context.WithoutCancel(ctx), name)
	err := s.WriteNew(ctx, name, []byte("probe again\n"))
	switch {
	case err == nil:
		return fmt.Errorf("%s: %w", s.Loc(dir), ErrNotExclusive)
	case errors.Is(err, fs.ErrExist):
		return nil
	}
	return err
}
