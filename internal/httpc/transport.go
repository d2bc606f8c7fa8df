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
// below minSpeed over a window. A replayable request answered 408 is sent
// again (retry408); a plain http request to a server known to speak h2c
// goes to h2c.
type transport struct {
	base     *http.Transport
	h2c      *h2c // nil: no h2c (H2CNever)
	stall    time.Duration
	ua       string
	minSpeed int64
	window   time.Duration
	retry    Retry // DoRetry's, for this client's requests
}

// judgedKey marks the context of a request whose body is held to the
// minimum speed (DoResponse's).
type judgedKey struct{}

// retries408 is how many times a request answered 408 is sent again.
const retries408 = 2

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithCancel(req.Context())
	r := req.Clone(ctx) // a RoundTripper must not change the caller's request
	if r.Header.Get("User-Agent") == "" {
		r.Header.Set("User-Agent", t.ua)
	}
	resp, err := t.send(r)
	for n := 0; err == nil && resp.StatusCode == http.StatusRequestTimeout && n < retries408 && replayable(r); n++ {
		// A 408 is a server closing a connection it found idle; one
		// that was about to carry this request answers it with that 408
		// (net/http drops a 408 that comes before a request, not one
		// that crosses it). The request was not served: it goes again,
		// on a new connection, as net/http sends again a request whose
		// reused connection closed before answering.
		drain(resp.Body)
		var again *http.Request
		if again, err = rewound(r); err == nil {
			r = again
			resp, err = t.send(r)
		}
	}
	if err != nil {
		cancel()
		return nil, err
	}
	t.watch(resp, req.URL.Redacted(), req.Context().Value(judgedKey{}) != nil, cancel)
	return resp, nil
}

// send sends r over h2c to a server known to speak it, else through the
// Transport.
func (t *transport) send(r *http.Request) (*http.Response, error) {
	if t.h2c == nil || r.URL.Scheme != "http" {
		return t.base.RoundTrip(r)
	}
	return t.h2c.roundTrip(r)
}

// replayable says whether r can be sent again: an idempotent method with
// no body, or a body GetBody gives again.
func replayable(r *http.Request) bool {
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions, "":
	default:
		return false
	}
	return r.Body == nil || r.Body == http.NoBody || r.GetBody != nil
}

// rewound is r ready to be sent again: its body, if any, from GetBody.
func rewound(r *http.Request) (*http.Request, error) {
	if r.Body == nil || r.Body == http.NoBody {
		return r, nil
	}
	body, err := r.GetBody()
	if err != nil {
		return nil, err
	}
	again := r.Clone(r.Context())
	again.Body = body
	return again, nil
}

// drain reads a little of a body we do not want, so that its connection
// may be kept, and closes it.
func drain(rc io.ReadCloser) {
	io.CopyN(io.Discard, rc, 4<<10)
	rc.Close()
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
// pools.
func (t *transport) CloseIdleConnections() {
	t.base.CloseIdleConnections()
	if t.h2c != nil {
		t.h2c.t.CloseIdleConnections()
	}
}

// watched is a response body whose reads fail with a StallError after
// waiting stall without a byte, and, with a floor, with a SpeedError
// below its speed. Only time spent inside Read counts: a caller busy
// between reads is not a stalled or slow server. The stall timer is made
// at the first read.
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
	t := w.arm()
	n, err := w.rc.Read(p)
	t.Stop()
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
