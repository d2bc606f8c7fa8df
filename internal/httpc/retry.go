package httpc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/rsdump/rsdump/internal/plural"
)

// Retry bounds the attempts of a fetch that failed for a reason that
// passes (restic's RetryBackend around a backend operation): a connection
// reset or closed before the response, 408, 429 and 5xx other than 501
// and 505. The wait doubles from Base after
// each failure; a 429 or 503 that says Retry-After waits that long
// instead. No wait is longer than MaxWait, and no retry starts once
// MaxTime has passed since the first attempt, or would pass in its wait.
// Zero values take the defaults in brackets.
type Retry struct {
	Attempts int           // in all, the first included [5]
	Base     time.Duration // the first wait [500ms]
	MaxWait  time.Duration // one wait at most, Retry-After included [15s]
	MaxTime  time.Duration // from the first attempt to the start of the last [60s]
}

// Retry's defaults.
const (
	DefaultAttempts     = 5
	DefaultRetryBase    = 500 * time.Millisecond
	DefaultRetryMaxWait = 15 * time.Second
	DefaultRetryMaxTime = 60 * time.Second
)

func (r Retry) withDefaults() Retry {
	if r.Attempts <= 0 {
		r.Attempts = DefaultAttempts
	}
	if r.Base <= 0 {
		r.Base = DefaultRetryBase
	}
	if r.MaxWait <= 0 {
		r.MaxWait = DefaultRetryMaxWait
	}
	if r.MaxTime <= 0 {
		r.MaxTime = DefaultRetryMaxTime
	}
	return r
}

// RetryError is a fetch that failed on every one of its Attempts, or
// whose last failure was not retried because the time bound was reached;
// Err is the last failure, which names the URL.
type RetryError struct {
	Attempts int
	Err      error
}

func (e *RetryError) Error() string {
	return fmt.Sprintf("%v (%s)", e.Err, plural.Count(e.Attempts, "attempt"))
}

func (e *RetryError) Unwrap() error { return e.Err }

// DoRetry is DoResponse, with the retries the client's Options.Retry
// allows (the defaults for a client New did not build): the request,
// which must have no body, is sent again after a failure that passes
// until it succeeds, fails for good, or the bounds are reached; a failure
// after more than one attempt is a *RetryError. A wait ends early, with
// the context's error, when the request's context is done. Only the
// exchange up to the response headers is retried: a body that fails
// while it is read fails its reader, as with DoResponse.
func DoRetry(c *http.Client, req *http.Request, maxBytes int64) (*http.Response, io.ReadCloser, error) {
	if c == nil {
		c = Default()
	}
	r := Retry{}.withDefaults()
	if t, ok := c.Transport.(*transport); ok {
		r = t.retry
	}
	ctx := req.Context()
	start := time.Now()
	wait := r.Base
	for n := 1; ; n++ {
		resp, rc, err := DoResponse(c, req.Clone(ctx), maxBytes)
		if err == nil || ctx.Err() != nil {
			return resp, rc, err
		}
		d, ok := retryAfter(err, wait, r.MaxWait)
		if !ok || n >= r.Attempts || time.Since(start)+d > r.MaxTime {
			if n == 1 {
				return nil, nil, err
			}
			return nil, nil, &RetryError{Attempts: n, Err: err}
		}
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, nil, fmt.Errorf("%s: %w (waiting to try again after %v)", req.URL.Redacted(), ctx.Err(), err)
		case <-t.C:
		}
		wait = min(2*wait, r.MaxWait)
	}
}

// retryAfter says whether err passes, and how long to wait before the
// next attempt: the server's Retry-After when it gave one, else backoff;
// never more than max.
func retryAfter(err error, backoff, max time.Duration) (time.Duration, bool) {
	var se *StatusError
	if errors.As(err, &se) {
		switch {
		case se.Code == http.StatusRequestTimeout, se.Code == http.StatusTooManyRequests,
			se.Code >= 500 && se.Code != http.StatusNotImplemented && se.Code != http.StatusHTTPVersionNotSupported:
		default:
			return 0, false
		}
		if se.RetryAfter > 0 {
			return min(se.RetryAfter, max), true
		}
		return min(backoff, max), true
	}
	return min(backoff, max), transient(err)
}

// transient says whether a failure before a response passes: the
// connection was reset or closed under the request. A host that refuses
// connections, a name that does not resolve, a certificate, a redirect
// rule, a cancelled context do not; nor does a server that sent no
// headers within the timeout, whose wait the stall timeout bounds once.
func transient(err error) bool {
	switch {
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded),
		errors.Is(err, ErrScheme), errors.Is(err, ErrRedirects):
		return false
	}
	return errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNABORTED) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}

// parseRetryAfter reads a Retry-After field: seconds, or an HTTP date; 0
// when absent, unreadable or past.
func parseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseInt(v, 10, 64); err == nil {
		return time.Duration(max(0, min(s, 86400))) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}
