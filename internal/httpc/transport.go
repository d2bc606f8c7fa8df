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
// without a byte.
type transport struct {
	base  *http.Transport
	stall time.Duration
	ua    string
}

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithCancel(req.Context())
	r := req.Clone(ctx) // a RoundTripper must not change the caller's request
	if r.Header.Get("User-Agent") == "" {
		r.Header.Set("User-Agent", t.ua)
	}
	resp, err := t.base.RoundTrip(r)
	if err != nil {
		cancel()
		return nil, err
	}
	resp.Body = newWatched(resp.Body, req.URL.Redacted(), t.stall, cancel)
	return resp, nil
}

// CloseIdleConnections lets http.Client.CloseIdleConnections reach the
// pool.
func (t *transport) CloseIdleConnections() { t.base.CloseIdleConnections() }

// watched is a response body whose reads fail with a StallError after
// waiting stall without a byte. Only time spent inside Read counts: a
// caller busy between reads is not a stalled server.
type watched struct {
	rc      io.ReadCloser
	url     string
	stall   time.Duration
	cancel  context.CancelFunc
	timer   *time.Timer
	stalled atomic.Bool
}

func newWatched(rc io.ReadCloser, url string, stall time.Duration, cancel context.CancelFunc) *watched {
	w := &watched{rc: rc, url: url, stall: stall, cancel: cancel}
	w.timer = time.AfterFunc(time.Hour, func() {
		w.stalled.Store(true)
		cancel()
	})
	w.timer.Stop()
	return w
}

func (w *watched) Read(p []byte) (int, error) {
	if w.stalled.Load() {
		return 0, w.stallErr()
	}
	w.timer.Reset(w.stall)
	n, err := w.rc.Read(p)
	w.timer.Stop()
	if err != nil && err != io.EOF && w.stalled.Load() {
		err = w.stallErr()
	}
	return n, err
}

func (w *watched) stallErr() error { return &StallError{URL: w.url, After: w.stall} }

func (w *watched) Close() error {
	w.timer.Stop()
	err := w.rc.Close()
	w.cancel()
	return err
}
