package httpc

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"
)

// ErrTooSlow is what every *SpeedError unwraps to.
var ErrTooSlow = errors.New("below the minimum speed")

// SpeedError says a server delivered less than a minimum speed over a
// window of time.
type SpeedError struct {
	URL    string
	Speed  float64 // bytes/s over the window
	Min    int64
	Window time.Duration
}

func (e *SpeedError) Error() string {
	w := e.Window.Round(10 * time.Millisecond)
	if w >= 10*time.Second {
		w = w.Round(time.Second)
	}
	return fmt.Sprintf("%s: %s over %s: %v of %s", e.URL, rate(e.Speed), w, ErrTooSlow, rate(float64(e.Min)))
}

func (e *SpeedError) Unwrap() error { return ErrTooSlow }

// rate renders bytes/s for a message.
func rate(v float64) string {
	switch {
	case v >= 1<<20:
		return fmt.Sprintf("%.1f MiB/s", v/(1<<20))
	case v >= 1<<10:
		return fmt.Sprintf("%.1f KiB/s", v/(1<<10))
	}
	return fmt.Sprintf("%.0f B/s", v)
}

// Pace is the one minimum-speed watch: what a server delivered since the
// current window began, judged against a floor each time the window is
// long enough. The window restarts when the first request in flight goes
// out (Begin) and each time it is judged, so neither idle time nor a
// wait for a connection counts as slow. transfer keeps one per mirror of
// a file, over all its connections, on the wall clock; a response body
// that Open returns keeps its own, on a clock that runs only while a read
// waits (see Options.MinSpeed). Its methods are safe for concurrent use,
// at two atomic operations per Add.
type Pace struct {
	start atomic.Int64 // on the caller's clock, in nanoseconds
	bytes atomic.Int64
	busy  atomic.Int32 // requests in flight
}

// Begin counts a request going out at now; End, one done.
func (p *Pace) Begin(now int64) {
	if p.busy.Add(1) == 1 {
		p.start.Store(now)
		p.bytes.Store(0)
	}
}

// End counts a request done.
func (p *Pace) End() { p.busy.Add(-1) }

// Add counts n bytes received at now and, once the window is at least
// window long, judges it and starts the next: below min bytes/s it
// returns a *SpeedError naming url. Only one of several concurrent calls
// judges a window.
func (p *Pace) Add(url string, n int, now int64, min int64, window time.Duration) *SpeedError {
	got := p.bytes.Add(int64(n))
	start := p.start.Load()
	if start == 0 {
		// A request counted in flight before the first one stored its
		// time (Begin adds, then stores): its window starts now, not
		// in 1970, which would judge the first bytes over 56 years.
		p.start.CompareAndSwap(0, now)
		return nil
	}
	el := time.Duration(now - start)
	if el < window || !p.start.CompareAndSwap(start, now) {
		return nil // too early, or another read judged this window
	}
	p.bytes.Add(-got)
	speed := float64(got) / el.Seconds()
	if speed >= float64(min) {
		return nil
	}
	return &SpeedError{URL: url, Speed: speed, Min: min, Window: el}
}
