package resourcesync

import (
	"errors"
	"fmt"
	"time"
)

// MaxSkew is how far ahead of this machine's clock a time in a Source's
// document may be: clocks that are set differ by seconds, not minutes.
const MaxSkew = 5 * time.Minute

// Horizon is the latest time a Source's document may give, read now.
func Horizon() time.Time { return time.Now().Add(MaxSkew) }

// ErrFuture is a time in a document later than the horizon.
var ErrFuture = errors.New("later than now")

// FutureError is a time in a Source's document later than now plus
// MaxSkew: a Source whose clock is wrong, or a document made to move a
// Destination's state past changes it has not seen. It is never trusted.
type FutureError struct {
	Loc     string // the document
	Entry   int    // 1-based; 0 for the document's own <rs:md>
	URI     string // the entry's <loc>
	Attr    string // "at", "until", "datetime", ...
	Time    time.Time
	Horizon time.Time
}

func (e *FutureError) Error() string {
	where := e.Loc
	if e.Entry > 0 {
		where = fmt.Sprintf("%s: entry %d (%s)", e.Loc, e.Entry, e.URI)
	}
	return fmt.Sprintf("%s: %s %s is later than now plus %s (%s): refused", where, e.Attr, FormatTime(e.Time), MaxSkew, FormatTime(e.Horizon))
}

// Unwrap makes errors.Is(err, ErrFuture) hold.
func (e *FutureError) Unwrap() error { return ErrFuture }

// FutureHeader is the FutureError for the first time of a document's own
// <rs:md> later than horizon, or nil.
func FutureHeader(loc string, h Header, horizon time.Time) error {
	if attr, t := laterThan(h.MD, horizon); attr != "" {
		return &FutureError{Loc: loc, Attr: attr, Time: t, Horizon: horizon}
	}
	return nil
}

// FutureEntry is the FutureError for the first time of entry n that says
// when something happened at the Source (its <rs:md> times, and the
// <lastmod> a change with no datetime gives as its time: ChangeTime)
// later than horizon, or nil. The <lastmod> of a resource is its own
// time, which a Source's files may set anyhow: not checked.
func FutureEntry(loc string, n int, u URL, horizon time.Time) error {
	var attr string
	var t time.Time
	if u.MD != nil {
		attr, t = laterThan(*u.MD, horizon)
		if when, ok := u.ChangeTime(); attr == "" && u.MD.Change != "" && ok && when.After(horizon) {
			attr, t = "lastmod", when // a datetime after the horizon is laterThan's
		}
	}
	if attr == "" {
		return nil
	}
	return &FutureError{Loc: loc, Entry: n, URI: u.Loc, Attr: attr, Time: t, Horizon: horizon}
}

func laterThan(md MD, horizon time.Time) (string, time.Time) {
	for _, c := range []struct {
		attr string
		t    time.Time
	}{{"at", md.At}, {"completed", md.Completed}, {"from", md.From}, {"until", md.Until}, {"datetime", md.Datetime}} {
		if c.t.After(horizon) {
			return c.attr, c.t
		}
	}
	return "", time.Time{}
}
