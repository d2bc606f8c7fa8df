package httpc

import (
	"context"
	"io"
	"net/http"
	"sync/atomic"
	"time"
)

// transport sets the User-Agent and watches each response body. It is
// restic's watchdog round tripper for downloads: the request runs under a
// context of its own, cancelled when a read of the body waits stall
// without a byte, or, for a request DoResponse sends, when the body falls
// below minSpeed over a window.
type transport struct {
	base     *http.Transport
	lean     *lean // nil: every request goes to base
	stall    time.Duration
	ua       string
	minSpeed int64
	window   time.Duration
	retry    Retry // DoRetry's, for this client's requests
}

// judgedKey marks the context of a request whose body is held to the
// minimum speed (DoResponse's).
type judgedKey struct{}

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithCancel(req.Context())
	r := req.Clone(ctx) // a RoundTripper must not change the caller's request
	if r.Header.Get("User-Agent") == "" {
		r.Header.Set("User-Agent", t.ua)
	}
	var resp *http.Response
	var err error
	if t.lean != nil && t.lean.takes(r) {
		resp, err = t.lean.roundTrip(r)
	} else {
		resp, err = t.base.RoundTrip(r)
	}
	if err != nil {
		cancel()
		return nil, err
	}
	t.watch(resp, req.URL.Redacted(), req.Context().Value(judgedKey{}) != nil, cancel)
	countBody(req.Context(), resp)
	return resp, nil
}

// watch puts resp's body under the stall watch, and, judged, under the
// minimum speed; cancel stops the request.
func (t *transport) watch(resp *http.Response, url string, judged bool, cancel context.CancelFunc) {
	w := newWatched(resp.Body, url, t.stall, cancel)
	if t.minSpeed > 0 && judged {
		w.floor = &floor{min: t.minSpeed, window: t.window, clock: time.Now().UnixNano()}
		w.floor.pace.Begin(w.floor.clock)
	}
	resp.Body = w
}

// CloseIdleConnections lets http.Client.CloseIdleConnections reach the
// pool.
func (t *transport) CloseIdleConnections() {
	t.base.CloseIdleConnections()
	if t.lean != nil {
		t.lean.closeIdle()
	}
}

// watched is a response body whose reads fail with a StallError after
// waiting stall without a byte, and, with a floor, with a SpeedError
// below its speed. Only time spent inside Read counts: a caller busy
// between reads is not a stalled or slow server. The stall timer is made
// at the first read that may wait (a body already buffered, as a small
// pipelined resource is, needs none).
type watched struct {
	rc      io.ReadCloser
	url     string
	stall   time.Duration
	cancel  context.CancelFunc
	timer   atomic.Pointer[time.Timer] // nil: no read waited yet
	stalled atomic.Bool
	floor   *floor
	slow    error // the floor's verdict, returned by every later read
}

// readier is a body that can tell a read will not wait (leanBody).
type readier interface{ ready() bool }

// floor judges a body's speed with a Pace on a clock that runs only
// while a read waits.
type floor struct {
	pace   Pace
	min    int64
	window time.Duration
	clock  int64 // nanoseconds: the body's arrival plus the time spent in reads
}

func newWatched(rc io.ReadCloser, url string, stall time.Duration, cancel context.CancelFunc) *watched {
	return &watched{rc: rc, url: url, stall: stall, cancel: cancel}
}

// arm starts the stall timer for a read, making it the first time.
func (w *watched) arm() *time.Timer {
	if t := w.timer.Load(); t != nil {
		t.Reset(w.stall)
		return t
	}
	t := time.AfterFunc(w.stall, func() {
		w.stalled.Store(true)
		w.cancel()
	})
	w.timer.Store(t)
	return t
}

func (w *watched) Read(p []byte) (int, error) {
	switch {
	case w.stalled.Load():
		return 0, w.stallErr()
	case w.slow != nil:
		return 0, w.slow
	}
	start := time.Now()
	var t *time.Timer
	if r, ok := w.rc.(readier); !ok || !r.ready() {
		t = w.arm()
	}
	n, err := w.rc.Read(p)
	if t != nil {
		t.Stop()
	}
	if err != nil && err != io.EOF && w.stalled.Load() {
		err = w.stallErr()
	}
	if f := w.floor; f != nil && n > 0 {
		f.clock += int64(time.Since(start))
		if serr := f.pace.Add(w.url, n, f.clock, f.min, f.window); serr != nil {
			w.slow = serr
			w.cancel()
			return n, serr
		}
	}
	return n, err
}

func (w *watched) stallErr() error { return &StallError{URL: w.url, After: w.stall} }

func (w *watched) Close() error {
	// A read on another goroutine that had not made its timer yet
	// stops the one it makes when its read returns, which it does at
	// once on a closed body.
	if t := w.timer.Load(); t != nil {
		t.Stop()
	}
	err := w.rc.Close()
	w.cancel()
	return err
}
