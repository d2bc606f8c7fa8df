package mirrortest

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"
)

// faultWriter applies the byte-level faults to one response body.
type faultWriter struct {
	http.ResponseWriter
	m       *Mirror
	ctx     context.Context
	off     int64 // file offset of the first body byte
	sent    int64
	stalled bool
	buf     []byte
}

const chunk = 32 << 10

func (w *faultWriter) WriteHeader(code int) {
	h := w.Header()
	if w.m.wrongRange && code == http.StatusPartialContent {
		var a, b, size int64
		if _, err := fmt.Sscanf(h.Get("Content-Range"), "bytes %d-%d/%d", &a, &b, &size); err == nil {
			h.Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", a+1, b+1, size))
		}
	}
	if w.m.overlong > 0 {
		h.Del("Content-Length")
	}
	w.ResponseWriter.WriteHeader(code)
	w.flush() // headers go out at once, as from a real server, before any rate limit
}

func (w *faultWriter) Write(p []byte) (int, error) {
	written := 0
	for len(p) > 0 {
		n := min(len(p), chunk)
		if w.m.dripBytes > 0 {
			n = min(n, w.m.dripBytes)
			w.flush()
			if !sleep(w.ctx, w.m.dripEvery) {
				return written, w.ctx.Err()
			}
		}
		if d := w.m.dropAfter; d >= 0 {
			if w.sent >= d {
				w.flush()
				panic(http.ErrAbortHandler) // closes the connection mid-body
			}
			n = min(n, int(d-w.sent))
		}
		if err := w.before(n); err != nil {
			return written, err
		}
		c := w.corrupt(p[:n])
		k, err := w.ResponseWriter.Write(c)
		w.sent += int64(k)
		w.m.Bytes.Add(int64(k))
		written += k
		if err != nil {
			return written, err
		}
		p = p[n:]
	}
	return written, nil
}

// before runs the faults due before the next n bytes go out.
func (w *faultWriter) before(n int) error {
	m := w.m
	if m.rate != nil && !m.rate.wait(w.ctx, n) {
		return w.ctx.Err()
	}
	crossed := (w.sent+int64(n))>>20 != w.sent>>20
	if crossed && m.chance(m.dropPerMiB) {
		panic(http.ErrAbortHandler)
	}
	stallNow := !w.stalled && m.stallAfter >= 0 && w.sent+int64(n) > m.stallAfter
	if (stallNow || (crossed && m.stall > 0 && m.chance(m.stallPerMiB))) && m.takeStall() {
		w.stalled = true
		w.flush()
		if !sleep(w.ctx, m.stall) {
			return w.ctx.Err()
		}
	}
	return nil
}

func (w *faultWriter) flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// corrupt returns p with one byte flipped in each bad block it covers.
func (w *faultWriter) corrupt(p []byte) []byte {
	m := w.m
	if m.corruptFrac <= 0 {
		return p
	}
	start := w.off + w.sent
	out := p
	for b := start / m.block; b*m.block < start+int64(len(p)); b++ {
		pos := b*m.block + m.block/2 - start
		if pos < 0 || pos >= int64(len(p)) || !m.corruptBlock(b) {
			continue
		}
		if &out[0] == &p[0] {
			w.buf = append(w.buf[:0], p...)
			out = w.buf
		}
		out[pos] ^= 0x5a
	}
	return out
}

// bucket is a bandwidth limit shared by all of a mirror's connections:
// each write reserves its bytes on a virtual clock and sleeps until then.
type bucket struct {
	mu   sync.Mutex
	rate float64
	next time.Time
}

func (b *bucket) wait(ctx context.Context, n int) bool {
	b.mu.Lock()
	now := time.Now()
	if b.next.Before(now.Add(-20 * time.Millisecond)) {
		b.next = now.Add(-20 * time.Millisecond) // a small burst, no credit hoarding
	}
	d := time.Duration(float64(n) / b.rate * float64(time.Second))
	b.next = b.next.Add(d)
	until := b.next
	b.mu.Unlock()
	if sleep(ctx, time.Until(until)) {
		return true
	}
	b.mu.Lock()
	b.next = b.next.Add(-d) // a cancelled request gives its share back
	b.mu.Unlock()
	return false
}

func (m *Mirror) takeStall() bool {
	return !m.stallLimit || m.stallsLeft.Add(-1) >= 0
}
