package httpc

import (
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Backoff is the module's one backoff: how long to wait before the next
// attempt of something that failed for a reason that passes. DoRetry
// waits it between a document's attempts, transfer before a mirror's next
// piece after failures in a row, and the WebSub hub between the attempts
// of a delivery.
type Backoff struct {
	Base time.Duration // the first wait
	Max  time.Duration // the most a wait grows to by doubling
	// MaxAfter is the most a server's Retry-After is waited for: a
	// server cannot park a client for a day. 0: Max.
	MaxAfter time.Duration
	// Jitter waits a random half to all of each wait, so that the
	// clients of a server that recovers do not all come back at once.
	Jitter bool
}

// Wait is the wait before retry n (0: the first): Base doubled n times,
// at most Max (jittered), and never less than the server's retryAfter, at
// most MaxAfter.
func (b Backoff) Wait(n int, retryAfter time.Duration) time.Duration {
	d := b.Base << min(n, 30)
	if d > b.Max || d <= 0 {
		d = b.Max
	}
	if b.Jitter && d > 0 {
		d = d/2 + rand.N(d/2+1)
	}
	maxAfter := b.MaxAfter
	if maxAfter <= 0 {
		maxAfter = b.Max
	}
	return max(d, min(retryAfter, maxAfter))
}

// ParseRetryAfter reads a Retry-After field (RFC 9110 10.2.3): seconds,
// or an HTTP date; 0 when absent, unreadable or past, at most a day.
func ParseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseInt(v, 10, 64); err == nil {
		return time.Duration(max(0, min(s, 86400))) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return min(t.Sub(now), 24*time.Hour)
	}
	return 0
}
