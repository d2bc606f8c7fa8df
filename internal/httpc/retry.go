package httpc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"syscall"
	"time"

	"github.com/rsdump/rsdump/finding"
	"github.com/rsdump/rsdump/internal/opt"
	"github.com/rsdump/rsdump/internal/pause"
)

// Retry bounds the attempts of a fetch that failed for a reason that
// passes (restic's RetryBackend around a backend operation): a connection
// reset or closed before the response, 408, 429 and 5xx other than 501
// and 505; and the resumptions of a body cut while it is read (DoRetry).
// The waits are Backoff's, jittered: doubling from Base, and at least
// what a 429 or 503 asked for in its Retry-After. No wait is longer than
// MaxWait, and no retry starts once MaxTime has passed since the first
// attempt, or would pass in its wait.
// Zero values take the defaults in brackets.
type Retry struct {
	Attempts int           // in all, the first included [5]
	Base     time.Duration // the first wait [500ms]
	MaxWait  time.Duration // one wait at most, Retry-After included [15s]
	MaxTime  time.Duration // from the first attempt to the start of the last [60s]
	// Refused also retries a connection refused: for a server of our own
	// that may be restarting (a hub a Source notifies), not for a
	// document's host, where a refusal is an answer.
	Refused bool
}

// Retry's defaults.
const (
	DefaultAttempts     = 5
	DefaultRetryBase    = 500 * time.Millisecond
	DefaultRetryMaxWait = 15 * time.Second
	DefaultRetryMaxTime = 60 * time.Second
)

func (r Retry) withDefaults() Retry {
	opt.Default(&r.Attempts, DefaultAttempts)
	opt.Default(&r.Base, DefaultRetryBase)
	opt.Default(&r.MaxWait, DefaultRetryMaxWait)
	opt.Default(&r.MaxTime, DefaultRetryMaxTime)
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
	return fmt.Sprintf("%v (%s)", e.Err, finding.Plural(e.Attempts, "attempt"))
}

func (e *RetryError) Unwrap() error { return e.Err }

// DoRetry is DoResponse, with the retries the client's Options.Retry
// allows (the defaults for a client New did not build): the request,
// which must have no body or one its GetBody gives again (as
// http.NewRequest sets for a bytes.Reader), is sent again after a failure that passes
// until it succeeds, fails for good, or the bounds are reached; a failure
// after more than one attempt is a *RetryError. A wait ends early, with
// the context's error, when the request's context is done. A body whose
// connection is reset or cut while it is read is resumed where it broke,
// within the same bounds, when the server named its version (a strong
// ETag, else Last-Modified): the rest is asked for with Range and
// If-Range, and taken only as the 206 of exactly that rest; else the
// read fails as with DoResponse.
func DoRetry(c *http.Client, req *http.Request, maxBytes int64) (*http.Response, io.ReadCloser, error) {
	if c == nil {
		c = Default()
	}
	t := &retrier{c: c, r: Retry{}.withDefaults(), start: time.Now()}
	if tr, ok := c.Transport.(*transport); ok {
		t.r = tr.retry
	}
	resp, rc, err := t.do(req, maxBytes)
	if err != nil {
		return nil, nil, err
	}
	if v := validator(resp); v != "" && resp.StatusCode == http.StatusOK && !resp.Uncompressed {
		rc = &resumable{t: t, req: req, max: maxBytes, url: req.URL.Redacted(), version: v, total: resp.ContentLength, rc: rc}
	}
	return resp, rc, nil
}

// retrier is the state of one DoRetry: its attempts, over the request and
// the resumptions of its body.
type retrier struct {
	c     *http.Client
	r     Retry
	start time.Time
	n     int // attempts made
}

// do sends req, a clone of it for each attempt, until it succeeds or
// pause gives up.
func (t *retrier) do(req *http.Request, maxBytes int64) (*http.Response, io.ReadCloser, error) {
	ctx := req.Context()
	for {
		t.n++
		r := req.Clone(ctx)
		if t.n > 1 && req.GetBody != nil {
			body, err := req.GetBody()
			if err != nil {
				return nil, nil, err
			}
			r.Body = body
		}
		resp, rc, err := DoResponse(t.c, r, maxBytes)
		if err == nil || ctx.Err() != nil {
			return resp, rc, err
		}
		if err := t.pause(req, err); err != nil {
			return nil, nil, err
		}
	}
}

// pause waits before the attempt after the failure err, or returns the
// error to give up with: err itself after one attempt, else a
// *RetryError.
func (t *retrier) pause(req *http.Request, err error) error {
	after, ok := passes(err)
	if !ok && t.r.Refused && errors.Is(err, syscall.ECONNREFUSED) {
		ok = true
	}
	d := Backoff{Base: t.r.Base, Max: t.r.MaxWait, Jitter: true}.Wait(t.n-1, after)
	if !ok || t.n >= t.r.Attempts || time.Since(t.start)+d > t.r.MaxTime {
		if t.n == 1 {
			return err
		}
		return &RetryError{Attempts: t.n, Err: err}
	}
	if werr := pause.For(req.Context(), d); werr != nil {
		return fmt.Errorf("%s: %w (waiting to try again after %v)", req.URL.Redacted(), werr, err)
	}
	return nil
}

// validator is what names the version of a response's body for If-Range:
// its ETag when strong, else its Last-Modified; "" for neither.
func validator(resp *http.Response) string {
	if e := resp.Header.Get("ETag"); e != "" && !strings.HasPrefix(e, "W/") {
		return e
	}
	// A Last-Modified is a strong validator only when the response was
	// sent at least a second after it (RFC 9110, 8.8.2.2): a document
	// replaced within that second would otherwise pass for the same.
	lm := resp.Header.Get("Last-Modified")
	mod, err1 := http.ParseTime(lm)
	date, err2 := http.ParseTime(resp.Header.Get("Date"))
	if err1 != nil || err2 != nil || date.Sub(mod) < time.Second {
		return ""
	}
	return lm
}

// resumable is a body that, when its connection is reset or cut, asks for
// the rest of the same version, and reads on from it.
type resumable struct {
	t       *retrier
	req     *http.Request // the first request, whose headers every resumption sends
	max     int64         // the cap over the whole body; <= 0: none
	url     string
	version string // If-Range's validator
	total   int64  // the first response's length; -1 unknown
	rc      io.ReadCloser
	off     int64 // bytes read
	err     error // the failure returned, returned again
}

func (b *resumable) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	for {
		n, err := b.rc.Read(p)
		b.off += int64(n)
		if b.max > 0 && b.off > b.max { // each response is capped from where it starts
			b.err = tooLarge(b.url, b.max)
			return n - int(b.off-b.max), b.err
		}
		if err == nil || err == io.EOF || !transient(err) {
			return n, err
		}
		if rerr := b.resume(err); rerr != nil {
			b.err = rerr
			return n, rerr
		}
		if n > 0 {
			return n, nil
		}
	}
}

// resume replaces the broken body by the rest of it, or says why not.
func (b *resumable) resume(cause error) error {
	if err := b.t.pause(b.req, cause); err != nil {
		return err
	}
	req := b.req.Clone(b.req.Context())
	req.Header.Set("Range", fmt.Sprintf("bytes=%d-", b.off))
	req.Header.Set("If-Range", b.version)
	resp, rc, err := b.t.do(req, b.max)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusPartialContent || !strings.HasPrefix(resp.Header.Get("Content-Range"), fmt.Sprintf("bytes %d-", b.off)) {
		rc.Close()
		return &RetryError{Attempts: b.t.n, Err: fmt.Errorf("%w; the rest was not served (HTTP %s)", cause, resp.Status)}
	}
	// A server or proxy may ignore If-Range and send the range of another
	// version: the rest is taken only from the same one, whole length
	// included, never spliced onto the first part.
	if validator(resp) != b.version || b.total >= 0 && !strings.HasSuffix(resp.Header.Get("Content-Range"), fmt.Sprintf("/%d", b.total)) {
		rc.Close()
		return &RetryError{Attempts: b.t.n, Err: fmt.Errorf("%w; the rest was served from another version of the document", cause)}
	}
	b.rc.Close()
	b.rc = rc
	return nil
}

func (b *resumable) Close() error { return b.rc.Close() }

// passes says whether err passes, and the wait the server asked for in
// its Retry-After (0: none).
func passes(err error) (retryAfter time.Duration, ok bool) {
	var se *StatusError
	if errors.As(err, &se) {
		switch {
		case se.Code == http.StatusRequestTimeout, se.Code == http.StatusTooManyRequests,
			se.Code >= 500 && se.Code != http.StatusNotImplemented && se.Code != http.StatusHTTPVersionNotSupported:
			return se.RetryAfter, true
		}
		return 0, false
	}
	return 0, transient(err)
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
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || closedIdle(err)
}

// closedIdle says whether err is net/http's "server closed idle
// connection" (unexported): a connection the server closed before it
// answered, which net/http sends again by itself only when it was a
// reused one.
func closedIdle(err error) bool {
	return strings.Contains(err.Error(), "http: server closed idle connection")
}
