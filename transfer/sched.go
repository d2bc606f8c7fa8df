package transfer

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
)

// piece is one range of the file. The download's mutex guards every
// field but writer and stored, which wmu guards so that a write to the
// file never waits for the scheduler. Lock order: d.mu, then wmu
// (writeDup); never d.mu while holding wmu. The whole-file hash's lock
// (wholeHash.mu) is never held with either. A held download's memory
// lock (held.mu) is a leaf, taken under any of them.
type piece struct {
	done    bool
	skip    bool     // a held download's piece an earlier run verified: fetched only if the reader asks (see held)
	primary *attempt // the copy that writes to the file as it streams
	dup     *attempt // an end-game copy, buffered, written only if it wins
	excl    []int    // mirrors whose copy failed the hash
	tries   int
	from    int // 1 + the index of the mirror whose copy was written, 0 if unknown (see repair)
	wmu     sync.Mutex
	writer  int64 // the streamed copy allowed to write
	stored  bool  // a buffered copy was written
}

// next blocks until there is a piece and a mirror with a free slot for
// it, or the file is finished or failed (nil attempt). It wakes only when
// something changes or a backoff ends: never a busy loop.
func (d *download) next(ctx context.Context) (*attempt, error) {
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		hostCh := d.g.budget.changed.wait()
		ch := d.changed.wait()
		d.mu.Lock()
		if d.remaining == 0 || d.err != nil || d.stream != nil {
			d.mu.Unlock()
			return nil, nil
		}
		a, wait := d.assign(time.Now())
		d.mu.Unlock()
		if a != nil {
			return a, nil
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-ch:
		case <-hostCh:
		case <-t.C:
		}
		t.Stop()
	}
}

// assign picks the best ready mirror that has a piece to do and a free
// connection slot; wait says how long until a backoff ends.
func (d *download) assign(now time.Time) (*attempt, time.Duration) {
	if d.allDropped() {
		if d.stream = d.streamCandidate(); d.stream == nil {
			d.failLocked(&MirrorsError{File: d.f.Name, Mirrors: d.mirrorResults()})
		}
		d.changed.notify() // the other workers stop too
		return nil, 0
	}
	wait := time.Second
	for _, m := range d.candidates(now, &wait) {
		p, dup := d.pickPiece(m, now)
		if p < 0 || !d.g.budget.tryHost(m.host) {
			continue
		}
		return d.start(m, p, dup), 0
	}
	return nil, wait
}

func (d *download) allDropped() bool {
	for _, m := range d.mirrors {
		if m.alive() {
			return false
		}
	}
	return true
}

// candidates are the mirrors allowed another connection, best first.
func (d *download) candidates(now time.Time, wait *time.Duration) []*mirror {
	var out []*mirror
	for _, m := range d.mirrors {
		switch {
		case !m.alive():
		case !m.ready(now):
			*wait = min(*wait, m.notUntil.Sub(now))
		case m.active < m.limit(d.g.opts.PerMirror):
			out = append(out, m)
		}
	}
	slices.SortStableFunc(out, func(a, b *mirror) int {
		sa, sb := a.score(), b.score()
		switch {
		case sa > sb:
			return -1
		case sa < sb:
			return 1
		}
		return 0
	})
	return out
}

// maxDupPiece bounds the pieces that get an end-game copy, which is
// buffered in memory until it wins: piece lengths come from the Metalink,
// and a 1 GiB piece times the connections would exhaust memory. Larger
// pieces still recover from a stall, by the stall timeout.
const maxDupPiece = 16 << 20

// pickPiece returns the first piece nobody is fetching that m may serve;
// when none is left it looks for an end-game duplicate.
func (d *download) pickPiece(m *mirror, now time.Time) (int, bool) {
	for d.cursor < d.n && d.pieces[d.cursor].done {
		d.cursor++
	}
	dupOK := d.plen <= maxDupPiece
	if dupOK {
		if i := d.straggler(m, now); i >= 0 {
			return i, true
		}
	}
	if i := d.urgentPiece(m); i >= 0 {
		return i, false
	}
	todo := false
	for i := d.cursor; i < d.n; i++ {
		p := &d.pieces[i]
		if p.done || p.primary != nil || p.dup != nil || p.skip {
			continue
		}
		todo = true
		if !d.inWindow(i) {
			break
		}
		if d.mayServe(m, p) {
			return i, false
		}
	}
	if todo || !dupOK {
		return -1, false
	}
	return d.endGame(m, now), true
}

// mayServe: a mirror whose copy of a piece failed its hash serves it
// again only when every live mirror has failed it (then all get another
// chance, up to a bound).
func (d *download) mayServe(m *mirror, p *piece) bool {
	if !slices.Contains(p.excl, m.idx) {
		return true
	}
	for _, o := range d.mirrors {
		if o.alive() && !slices.Contains(p.excl, o.idx) {
			return false
		}
	}
	p.excl = p.excl[:0]
	return true
}

// endGame picks the in-flight piece that m would finish soonest relative
// to its current copy, if m is clearly faster than that copy.
func (d *download) endGame(m *mirror, now time.Time) int {
	best, bestGain := -1, 0.0
	for i := d.cursor; i < d.n; i++ {
		p := &d.pieces[i]
		if p.done || p.primary == nil || !p.primary.bodyDone.IsZero() || p.dup != nil || p.primary.m == m || slices.Contains(p.excl, m.idx) {
			continue
		}
		left := d.timeLeft(p.primary, now)
		mine := d.expected(m, i)
		if gain := left - mine; left > 1.5*mine && gain > bestGain {
			best, bestGain = i, gain
		}
	}
	return best
}

// straggler returns an in-flight piece near the front whose copy has
// stalled (no byte for ten times what m would need for the whole piece),
// or the first unfinished piece if its copy is merely very slow, for m to
// fetch too; -1 if none. Duplicating a stalled copy frees its connection
// once m's copy wins, long before the stall timeout, and the first piece
// holds up the in-order whole-file hash and the resume state behind it.
func (d *download) straggler(m *mirror, now time.Time) int {
	if m.rate == 0 {
		return -1
	}
	best, worst := -1, 0.0
	for i := d.cursor; i < min(d.n, d.cursor+stragglerWindow); i++ {
		p := &d.pieces[i]
		a := p.primary
		if p.done || a == nil || !a.bodyDone.IsZero() || p.dup != nil || a.m == m || slices.Contains(p.excl, m.idx) {
			continue
		}
		mine := d.expected(m, i)
		idle := now.Sub(time.Unix(0, a.last.Load())).Seconds()
		slow := i == d.cursor && now.Sub(a.start).Seconds() > max(1, 4*mine) && d.timeLeft(a, now) > 4*mine
		if (idle > max(1, 10*mine) || slow) && idle >= worst {
			best, worst = i, idle
		}
	}
	return best
}

// stragglerWindow bounds the pieces straggler looks at: in-flight pieces
// sit near the front.
const stragglerWindow = 64

// timeLeft estimates seconds until an attempt finishes, from its own pace
// (or its mirror's, before it has received anything).
func (d *download) timeLeft(a *attempt, now time.Time) float64 {
	off, end := d.span(a.piece)
	got, el := float64(a.got.Load()), now.Sub(a.start).Seconds()
	left := float64(end-off) - got
	if got > 0 && el > 0 {
		return left / (got / el)
	}
	if a.m.rate > 0 {
		return max(float64(end-off)/a.m.rate-el, el)
	}
	return el
}

func (d *download) expected(m *mirror, i int) float64 {
	off, end := d.span(i)
	if m.rate == 0 {
		return 0.05 + float64(end-off)/50e6 // a guess until measured
	}
	return float64(end-off) / m.rate
}

func (d *download) start(m *mirror, i int, dup bool) *attempt {
	d.nextID++
	a := &attempt{id: d.nextID, piece: i, m: m, dup: dup, start: time.Now()}
	a.last.Store(a.start.UnixNano())
	a.ctx, a.cancel = context.WithCancelCause(d.ctx)
	p := &d.pieces[i]
	p.tries++
	if dup {
		p.dup = a
	} else {
		p.primary = a
		p.wmu.Lock()
		p.writer = a.id
		p.wmu.Unlock()
	}
	m.active++
	return a
}

// finish records an attempt's outcome: the piece is done, or goes back to
// the pool (excluding a mirror that served it bad data), and the mirror
// is credited, backed off, demoted or dropped.
func (d *download) finish(a *attempt, err error) {
	if a.bodyDone.IsZero() { // else hangUp gave the slots back
		d.g.budget.releaseHost(a.m.host)
	}
	d.mu.Lock()
	d.settle(a, err)
	d.mu.Unlock()
	a.cancel(nil)
	d.changed.notify()
}

func (d *download) settle(a *attempt, err error) {
	m, p := a.m, &d.pieces[a.piece]
	if a.bodyDone.IsZero() {
		m.active--
	}
	if a.dup {
		p.dup = nil
	} else {
		p.primary = nil
	}
	switch {
	case d.ctx.Err() != nil:
		return
	case err == nil && !p.done:
		d.complete(a, p)
		return
	case err == nil:
		return
	}
	if errors.Is(err, errLost) && a.bodyDone.IsZero() {
		d.lost(a)
	}
	v, after := classify(err)
	d.judge(m, p, v, after, err)
	if v == ignore {
		return
	}
	// A piece is fetched again only when some of it came: a refused
	// connection or a mirror without Range sent nothing to fetch twice.
	if a.got.Load() > 0 && !errors.Is(err, ErrNoRange) {
		d.res.Refetch++ // by a new attempt, or by a copy under way or done
	}
	if p.done {
		return
	}
	d.cursor = min(d.cursor, a.piece)
	if p.tries > 3*len(d.mirrors)+3 {
		d.failLocked(fmt.Errorf("%s: piece %d failed %d times, last: %w", d.f.Name, a.piece, p.tries, err))
	}
}

// lost counts a copy overtaken by a faster one as a measure of its
// mirror's pace: a drip that never finishes a piece would otherwise stay
// unmeasured, which ranks it first for every free connection. A copy
// that never sent its request (it waited for the budget) says nothing.
func (d *download) lost(a *attempt) {
	sent := a.sent.Load()
	el := time.Since(time.Unix(0, sent))
	if sent == 0 || el < 50*time.Millisecond {
		return // cancelled before it could show a pace
	}
	r := float64(max(a.got.Load(), 1)) / el.Seconds()
	if a.m.rate == 0 || r < a.m.rate {
		a.m.observe(max(a.got.Load(), 1), el)
	}
}

// tooSlow drops a mirror below the minimum speed and cancels its copies.
func (d *download) tooSlow(m *mirror, err *SpeedError) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.drop(m, trimURL(err.Error(), m.url))
	for i := d.cursor; i < d.n; i++ {
		p := &d.pieces[i]
		for _, a := range []*attempt{p.primary, p.dup} {
			if a != nil && a.m == m {
				a.cancel(err)
			}
		}
	}
	d.changed.notify()
}

func (d *download) judge(m *mirror, p *piece, v verdict, after time.Duration, err error) {
	switch v {
	case badData:
		m.bad++
		m.record(true)
		p.excl = append(p.excl, m.idx)
		if m.mostlyBad() {
			d.drop(m, fmt.Sprintf("%d of its last %d pieces failed their hash", int(m.errRate()*float64(min(m.nRecent, healthWindow))+0.5), min(m.nRecent, healthWindow)))
		}
	case dropMirror:
		if errors.Is(err, ErrNoRange) {
			d.rangeless(m, trimURL(err.Error(), m.url))
			return
		}
		d.drop(m, trimURL(err.Error(), m.url))
	case retryLater:
		d.res.Retries++
		m.fails++
		if unanswered(err) && m.rate == 0 && m.bytes == 0 {
			// A server that accepts and never answers is not waited for
			// MaxFailures times over: the file fails within one stall
			// timeout when it has no other mirror. One that answered and
			// then stalled is retried.
			d.drop(m, "no answer within the stall timeout, and none before: "+trimURL(err.Error(), m.url))
			return
		}
		if m.fails >= d.g.opts.MaxFailures {
			d.drop(m, fmt.Sprintf("%d failures in a row, last: %s", m.fails, trimURL(err.Error(), m.url)))
			return
		}
		// One failure between successes only sends the piece elsewhere: a
		// mirror answering 503 to some requests keeps serving the rest.
		// From the second in a row (or when the server names a delay), the
		// whole mirror waits, exponentially longer each time.
		if m.fails > 1 || after > 0 {
			m.notUntil = time.Now().Add(backoff(max(m.fails-2, 0), after))
			d.g.budget.setState(m.host, "backoff")
		}
	}
}

func (d *download) complete(a *attempt, p *piece) {
	if a.dup && !a.stored && !d.writeDup(a, p) {
		return
	}
	off, end := d.span(a.piece)
	p.done = true
	p.from = a.m.idx + 1
	d.remaining--
	d.dirty = true
	d.verifiedBytes(end - off)
	m := a.m
	m.fails, m.notUntil = 0, time.Time{}
	m.bytes += end - off
	if d.f.Pieces.Hashes != nil {
		m.record(false)
	}
	took := time.Since(a.start)
	if !a.bodyDone.IsZero() {
		took = a.bodyDone.Sub(a.start) // not the time spent checking it
	}
	m.observe(end-off, took)
	for _, o := range []*attempt{p.primary, p.dup} {
		if o != nil {
			o.cancel(errLost)
		}
	}
	d.hashWake.notify()
}

// writeDup stores a winning end-game copy. Taking the piece's write lock
// and changing its writer stops the slower copy's writes for good.
func (d *download) writeDup(a *attempt, p *piece) bool {
	off, _ := d.span(a.piece)
	p.wmu.Lock()
	p.writer = a.id
	_, err := d.data().WriteAt(a.buf, off)
	p.wmu.Unlock()
	if err != nil {
		d.failLocked(fmt.Errorf("%s: %w", d.partPath, err))
		return false
	}
	return true
}

func (d *download) drop(m *mirror, reason string) {
	if !m.alive() {
		return
	}
	m.dropped = reason
	d.g.budget.setState(m.host, "dropped")
	d.g.opts.Events(&MirrorDropped{File: d.f.Name, URL: m.url, Reason: reason})
}

// rangeless takes a mirror that answered a range request with the whole
// file off the piece schedule and keeps it for one whole-file connection:
// it is reported as such, not as dropped.
func (d *download) rangeless(m *mirror, why string) {
	if m.noRange != "" || m.dropped != "" {
		return
	}
	m.noRange = why
	d.g.budget.setState(m.host, "no-range")
	d.g.opts.Events(&MirrorNoRange{File: d.f.Name, URL: m.url, Reason: why})
}

func (d *download) failLocked(err error) {
	if d.err == nil {
		d.err = err
		d.cancel()
	}
}

// trimURL drops the "URL: " prefix of an error that is shown next to the
// mirror's URL anyway.
func trimURL(msg, url string) string {
	return strings.TrimPrefix(msg, url+": ")
}

// unanswered reports whether err is a request that got no response
// within the stall timeout, as opposed to a body that stalled.
func unanswered(err error) bool {
	var na *noAnswerError
	return errors.As(err, &na)
}
