package transfer

import (
	"context"
	"sort"
	"sync"
	"sync/atomic"

	"golang.org/x/sync/semaphore"
)

// budget is the connection limit shared by every file of a Getter: a
// total, and a cap per host:port (two URLs on one server share it).
type budget struct {
	total   *semaphore.Weighted
	per     int
	mu      sync.Mutex
	hosts   map[string]*hostStat
	changed wakeup
}

// hostStat counts one host:port's connections and bytes for Getter.Mirrors.
type hostStat struct {
	active   int
	received atomic.Int64
	state    string
}

func newBudget(total, per int) *budget {
	return &budget{total: semaphore.NewWeighted(int64(total)), per: per, hosts: map[string]*hostStat{}}
}

func (b *budget) host(h string) *hostStat {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.hostLocked(h)
}

func (b *budget) hostLocked(h string) *hostStat {
	s := b.hosts[h]
	if s == nil {
		s = &hostStat{state: "waiting"}
		b.hosts[h] = s
	}
	return s
}

// tryHost takes a connection slot on host h if one is free.
func (b *budget) tryHost(h string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.hostLocked(h)
	if s.active >= b.per {
		return false
	}
	s.active++
	s.state = "active"
	return true
}

func (b *budget) releaseHost(h string) {
	b.mu.Lock()
	s := b.hostLocked(h)
	s.active--
	if s.active == 0 && s.state == "active" {
		s.state = "idle"
	}
	b.mu.Unlock()
	b.changed.notify()
}

func (b *budget) setState(h, state string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if s := b.hostLocked(h); s.active == 0 || state == "dropped" {
		s.state = state
	}
}

func (b *budget) acquire(ctx context.Context) error { return b.total.Acquire(ctx, 1) }

func (b *budget) release() { b.total.Release(1) }

// MirrorProgress is one host:port's share of the work so far.
type MirrorProgress struct {
	Host     string
	Active   int    // requests in flight now (connections over HTTP/1.1, streams over HTTP/2)
	Received int64  // bytes received, good or bad
	State    string // active, idle, waiting, backoff, no-range, dropped
}

func (b *budget) snapshot() []MirrorProgress {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]MirrorProgress, 0, len(b.hosts))
	for h, s := range b.hosts {
		out = append(out, MirrorProgress{Host: h, Active: s.active, Received: s.received.Load(), State: s.state})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Host < out[j].Host })
	return out
}

// wakeup lets goroutines wait for "something changed" without polling.
type wakeup struct {
	mu sync.Mutex
	ch chan struct{}
}

// wait returns a channel closed by the next notify.
func (w *wakeup) wait() <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ch == nil {
		w.ch = make(chan struct{})
	}
	return w.ch
}

func (w *wakeup) notify() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ch != nil {
		close(w.ch)
		w.ch = nil
	}
}
