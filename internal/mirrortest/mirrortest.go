// Package mirrortest is a fake HTTP mirror for transfer tests and
// benchmarks: http.ServeContent (real Range handling) behind a handler
// whose faults are chosen with options, after grab's grabtest.
package mirrortest

import (
	"context"
	"hash/fnv"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rsdump/rsdump/internal/pause"
)

// Option configures a Mirror.
type Option func(*Mirror)

// Mirror serves one file with the faults its options ask for.
type Mirror struct {
	content io.ReadSeeker
	size    int64
	name    string
	mu      sync.Mutex // guards content: ServeContent seeks it
	rng     *rand.Rand
	rngMu   sync.Mutex

	rate        *bucket
	latency     time.Duration
	corruptFrac float64 // share of blocks with one flipped byte
	block       int64
	dropAfter   int64   // close the connection after this many body bytes
	dropPerMiB  float64 // chance of closing the connection in each MiB
	stall       time.Duration
	stallAfter  int64        // stall once this many body bytes in
	stallPerMiB float64      // chance of a stall in each MiB
	stallsLeft  atomic.Int64 // with StallTimes: stalls still to come
	stallLimit  bool
	status      int
	statusFrac  float64
	retryAfter  string
	noRange     bool
	wrongRange  bool
	header      http.Header
	dripBytes   int           // with Drip: bytes per write
	dripEvery   time.Duration // with Drip: pause before each write
	overlong    int64         // bytes sent after the body, without a Content-Length

	Requests atomic.Int64 // requests received
	Bytes    atomic.Int64 // body bytes sent
}

// RateLimit caps the mirror's total bandwidth over all connections.
func RateLimit(bytesPerSec int64) Option {
	return func(m *Mirror) { m.rate = &bucket{rate: float64(bytesPerSec)} }
}

// Latency delays every response's headers.
func Latency(d time.Duration) Option { return func(m *Mirror) { m.latency = d } }

// Corrupt flips one byte in the given share of the file's block-sized
// blocks; the same blocks are bad on every request, like a bad disk.
func Corrupt(frac float64, block int64) Option {
	return func(m *Mirror) { m.corruptFrac, m.block = frac, block }
}

// DropAfter closes the connection after n body bytes of each response.
func DropAfter(n int64) Option { return func(m *Mirror) { m.dropAfter = n } }

// DropRate closes the connection with probability p in each MiB sent.
func DropRate(p float64) Option { return func(m *Mirror) { m.dropPerMiB = p } }

// StallAfter stops sending for d once n body bytes of a response are out.
func StallAfter(n int64, d time.Duration) Option {
	return func(m *Mirror) { m.stallAfter, m.stall = n, d }
}

// StallRate stops sending for d with probability p in each MiB sent.
func StallRate(p float64, d time.Duration) Option {
	return func(m *Mirror) { m.stallPerMiB, m.stall, m.stallAfter = p, d, -1 }
}

// StallTimes limits the stalls of StallAfter or StallRate to the first n
// over the mirror's life, so that a retry on the same mirror succeeds.
func StallTimes(n int64) Option {
	return func(m *Mirror) { m.stallLimit = true; m.stallsLeft.Store(n) }
}

// Status answers code (404, 429, 500, 503...) to the given share of
// requests; retryAfter, if set, goes in a Retry-After header.
func Status(code int, frac float64, retryAfter string) Option {
	return func(m *Mirror) { m.status, m.statusFrac, m.retryAfter = code, frac, retryAfter }
}

// Drip sends every body n bytes at a time, pausing d before each write:
// a mirror that never stalls long enough for a stall timeout yet would
// take hours.
func Drip(n int, d time.Duration) Option {
	return func(m *Mirror) { m.dripBytes, m.dripEvery = n, d }
}

// Overlong sends n bytes of junk after every body, with no Content-Length
// (chunked), so that only a client counting bytes notices.
func Overlong(n int64) Option { return func(m *Mirror) { m.overlong = n } }

// NoRange ignores Range headers and sends the whole file with 200.
func NoRange() Option { return func(m *Mirror) { m.noRange = true } }

// WrongRange answers a range request with the range one byte later.
func WrongRange() Option { return func(m *Mirror) { m.wrongRange = true } }

// Header adds response headers (Link, Digest) to every answer.
func Header(key, value string) Option {
	return func(m *Mirror) {
		if m.header == nil {
			m.header = http.Header{}
		}
		m.header.Add(key, value)
	}
}

// Seed makes the random faults reproducible.
func Seed(s uint64) Option { return func(m *Mirror) { m.rng = rand.New(rand.NewPCG(s, s^0x9e37)) } }

// New returns a handler serving content (size bytes) as name.
func New(content io.ReadSeeker, size int64, name string, opts ...Option) *Mirror {
	m := &Mirror{content: content, size: size, name: name, block: 1 << 20, stallAfter: -1, dropAfter: -1}
	m.rng = rand.New(rand.NewPCG(1, 2))
	for _, o := range opts {
		o(m)
	}
	return m
}

// Server starts m on a loopback httptest server; close it when done.
func Server(content io.ReadSeeker, size int64, name string, opts ...Option) (*httptest.Server, *Mirror) {
	m := New(content, size, name, opts...)
	return httptest.NewServer(m), m
}

// RefusedURL returns a loopback URL on which connections are refused.
func RefusedURL() string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "http://" + addr + "/refused"
}

func (m *Mirror) chance(p float64) bool {
	if p <= 0 {
		return false
	}
	m.rngMu.Lock()
	defer m.rngMu.Unlock()
	return m.rng.Float64() < p
}

// ServeHTTP applies the request-level faults, then serves the content
// through a writer that applies the byte-level ones.
func (m *Mirror) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	m.Requests.Add(1)
	for k, vs := range m.header {
		w.Header()[k] = vs
	}
	if !sleep(r.Context(), m.latency) {
		return
	}
	if m.status != 0 && m.chance(m.statusFrac) {
		if m.retryAfter != "" {
			w.Header().Set("Retry-After", m.retryAfter)
		}
		http.Error(w, "<html>fault injected</html>", m.status)
		return
	}
	if m.noRange || r.Header.Get("Range") == "" {
		r.Header.Del("Range")
	}
	fw := &faultWriter{ResponseWriter: w, m: m, ctx: r.Context(), off: rangeStart(r.Header.Get("Range"))}
	m.mu.Lock()
	data := m.snapshot()
	m.mu.Unlock()
	http.ServeContent(fw, r, m.name, time.Time{}, data)
	if m.overlong > 0 && fw.sent > 0 {
		fw.Write(make([]byte, m.overlong))
	}
}

// snapshot gives each request its own reader over the shared content.
func (m *Mirror) snapshot() io.ReadSeeker {
	if ra, ok := m.content.(io.ReaderAt); ok {
		return io.NewSectionReader(ra, 0, m.size)
	}
	return m.content
}

func rangeStart(h string) int64 {
	spec, ok := strings.CutPrefix(h, "bytes=")
	if !ok {
		return 0
	}
	a, _, _ := strings.Cut(spec, "-")
	n, err := strconv.ParseInt(a, 10, 64)
	if err != nil {
		return 0
	}
	return n
}

// sleep waits d, or until ctx is done: false then.
func sleep(ctx context.Context, d time.Duration) bool {
	return d <= 0 || pause.For(ctx, d) == nil
}

// corruptBlock reports whether block b is one of the bad ones.
func (m *Mirror) corruptBlock(b int64) bool {
	if m.corruptFrac <= 0 {
		return false
	}
	h := fnv.New64a()
	h.Write([]byte(strconv.FormatInt(b, 10)))
	return float64(h.Sum64()%1_000_000) < m.corruptFrac*1_000_000
}
