package transfer

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/rsdump/rsdump/internal/httpc"
)

// Sentinels that errors from this package unwrap to.
var (
	ErrPieceHash  = errors.New("piece hash mismatch")
	ErrFileHash   = errors.New("whole-file hash mismatch")
	ErrNoRange    = errors.New("server does not honour range requests")
	ErrBadRange   = errors.New("response does not match the requested range")
	ErrStalled    = errors.New("no progress within the stall timeout")
	ErrTooSlow    = httpc.ErrTooSlow
	ErrAllMirrors = errors.New("every mirror failed")
	// ErrUnverifiable: the source gives only hashes rsdump cannot compute,
	// so the file is refused before any byte is fetched.
	ErrUnverifiable = errors.New("no hash rsdump can compute")
	// ErrNotGettable: a source that is none of what get fetches: a
	// Resource Dump or Change Dump document (or an index of them), a
	// Metalink, a package (a ZIP). An HTML page, a Capability List, a
	// text file are refused by Resolve, so no file is downloaded for them.
	ErrNotGettable = errors.New("not a Resource Dump, Change Dump, Metalink or package (ZIP)")
)

// StatusError is an HTTP answer other than the one asked for.
type StatusError struct {
	URL        string
	Status     int
	RetryAfter time.Duration // from Retry-After, 0 if absent
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("%s: HTTP %d %s", e.URL, e.Status, http.StatusText(e.Status))
}

// retryable reports whether the same mirror may succeed later.
func (e *StatusError) retryable() bool {
	return e.Status == http.StatusTooManyRequests || e.Status == http.StatusRequestTimeout || e.Status >= 500
}

// SpeedError says a mirror delivered less than Options.MinSpeed over a
// window; it unwraps to ErrTooSlow. It is httpc's, whose Pace judges it.
type SpeedError = httpc.SpeedError

// MirrorsError says why every mirror of a file was dropped.
type MirrorsError struct {
	File    string
	Mirrors []MirrorResult
}

func (e *MirrorsError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: every mirror failed:", e.File)
	for i, m := range e.Mirrors {
		if i > 0 {
			b.WriteString(";")
		}
		why := m.Dropped
		if why == "" && m.NoRange {
			why = "no Range support"
		}
		fmt.Fprintf(&b, " %s (%s)", m.URL, why)
	}
	return b.String()
}

func (e *MirrorsError) Unwrap() error { return ErrAllMirrors }

// fastRetries shortens every backoff, so that tests of retry paths run in
// milliseconds (restic's backend_retry.go does the same).
var fastRetries = false

// mirrorBackoff is a mirror's wait after failures in a row: exponential,
// capped, with jitter so that connections to a recovering server do not
// return in lockstep; never less than the server's Retry-After, up to 5
// minutes.
var mirrorBackoff = httpc.Backoff{Base: 250 * time.Millisecond, Max: 30 * time.Second, MaxAfter: 5 * time.Minute, Jitter: true}

// backoff returns the wait before the n-th consecutive retry of a mirror
// (httpc's one backoff).
func backoff(n int, retryAfter time.Duration) time.Duration {
	if fastRetries {
		b := mirrorBackoff
		b.Base, b.Max, b.MaxAfter = time.Millisecond, 20*time.Millisecond, 3*time.Second
		return b.Wait(n, retryAfter/100) // Retry-After: 1 waits 10 ms
	}
	return mirrorBackoff.Wait(n, retryAfter)
}

// verdict is what a failed request means for its mirror.
type verdict int

const (
	retryLater verdict = iota // transient: back off, try again
	badData                   // the mirror served bytes that fail their hash
	dropMirror                // the mirror cannot serve this file
	ignore                    // we cancelled it ourselves
)

func classify(err error) (verdict, time.Duration) {
	var se *StatusError
	switch {
	case errors.Is(err, errLost):
		return ignore, 0
	case errors.Is(err, ErrPieceHash):
		return badData, 0
	case errors.Is(err, ErrNoRange), errors.Is(err, ErrBadRange), errors.Is(err, ErrTooSlow):
		return dropMirror, 0
	case errors.As(err, &se):
		if se.retryable() {
			return retryLater, se.RetryAfter
		}
		return dropMirror, 0
	}
	return retryLater, 0
}

// errLost marks an attempt cancelled because another copy of its piece won.
var errLost = errors.New("another mirror delivered this piece first")

// NoRange reports whether a mirror was left that sends the file only
// whole (it ignores Range): a download that could not take such a
// response (StreamHeld) may succeed as a plain one.
func (e *MirrorsError) NoRange() bool {
	for _, m := range e.Mirrors {
		if m.NoRange && m.Dropped == "" {
			return true
		}
	}
	return false
}
