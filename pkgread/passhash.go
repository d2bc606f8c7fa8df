package pkgread

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"io"
	"sort"
	"sync"
)

// ErrChanged is wrapped by the error PassHasher.Finish returns when bytes
// read before hashing started differ from the bytes hashed at the same
// offsets: the package changed while it was read (a network or FUSE mount,
// a file rewritten in place, a server that answers ranges inconsistently).
var ErrChanged = errors.New("the package changed while it was read")

// PassHasher is an io.ReaderAt that hashes a file front to back as the
// bitstreams are read, so that a package's own hash is checked in the same
// pass as its entries. Reads at or before the hashed prefix pass through;
// a read beyond it first hashes the gap (local headers, data descriptors,
// entries that were skipped). Finish hashes whatever was never read.
//
// Reads before Start (the central directory and manifest at the end of
// the file) are interpreted before the front reaches their bytes. Each one
// is recorded with the sha-256 of what it returned, and checked when the
// front hashes the same range, so that the hash covers exactly the bytes
// that were used: a tail that changed in between fails Finish with
// ErrChanged. Reads of bytes hashed in the last 64 KiB return the bytes
// hashed, not a second read of the file; older bytes are read again.
type PassHasher struct {
	ra     io.ReaderAt
	size   int64
	w      io.Writer
	mu     sync.Mutex
	active bool
	pos    int64 // bytes [0,pos) have been hashed
	gap    []byte
	err    error
	early  []earlyRead  // reads before Start, by offset once active
	next   int          // first of early the front has not reached
	live   []*earlyRead // early reads the front is inside
	win    []byte       // the last bytes hashed, a ring indexed by offset
	winLen int          // how many of them are valid: [pos-winLen, pos)
}

// windowSize is how far behind the front a read is answered with the bytes
// hashed rather than read again: archive/zip reads an entry's local header
// a second time, after verify checked it, to find where its data starts,
// and a file that changed in between must not move the data elsewhere.
const windowSize = 64 << 10

// earlyRead is a read made before Start.
type earlyRead struct {
	off, end int64
	sum      [sha256.Size]byte // of the bytes the read returned
	h        hash.Hash         // of the bytes hashed at [off,end), once reached
}

// NewPassHasher hashes the size bytes of ra into w.
func NewPassHasher(ra io.ReaderAt, size int64, w io.Writer) *PassHasher {
	return &PassHasher{ra: ra, size: size, w: w}
}

// Start begins hashing with the next read.
func (h *PassHasher) Start() {
	h.mu.Lock()
	h.activate()
	h.mu.Unlock()
}

func (h *PassHasher) activate() {
	if !h.active {
		h.active = true
		sort.SliceStable(h.early, func(i, j int) bool { return h.early[i].off < h.early[j].off })
	}
}

// ReadAt implements io.ReaderAt.
func (h *PassHasher) ReadAt(p []byte, off int64) (int, error) {
	n, err := h.ra.ReadAt(p, off)
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.active {
		if n > 0 {
			h.early = append(h.early, earlyRead{off: off, end: off + int64(n), sum: sha256.Sum256(p[:n])})
		}
		return n, err
	}
	if h.err != nil {
		return n, err
	}
	if lo, hi := max(off, h.pos-int64(h.winLen)), min(off+int64(n), h.pos); lo < hi {
		h.fromWindow(p[lo-off:hi-off], lo)
	}
	if off > h.pos {
		h.fill(off)
	}
	if h.err == nil && off <= h.pos && off+int64(n) > h.pos {
		h.hash(p[h.pos-off : n])
	}
	return n, err
}

// fill hashes [pos, to) by reading it.
func (h *PassHasher) fill(to int64) {
	if h.gap == nil {
		h.gap = make([]byte, bufSize)
	}
	for h.pos < to && h.err == nil {
		b := h.gap[:min(int64(len(h.gap)), to-h.pos)]
		n, err := h.ra.ReadAt(b, h.pos)
		h.hash(b[:n])
		if err != nil && h.pos < to {
			h.err = err
		}
	}
}

// hash hashes b, the bytes at pos, and checks the early reads of them.
func (h *PassHasher) hash(b []byte) {
	at, end := h.pos, h.pos+int64(len(b))
	h.w.Write(b)
	h.toWindow(b, at)
	h.pos = end
	for h.next < len(h.early) && h.early[h.next].off < end {
		r := &h.early[h.next]
		r.h = sha256.New()
		h.live = append(h.live, r)
		h.next++
	}
	keep := h.live[:0]
	for _, r := range h.live {
		r.h.Write(b[max(r.off, at)-at : min(r.end, end)-at])
		if r.end > end {
			keep = append(keep, r)
			continue
		}
		if !bytes.Equal(r.h.Sum(nil), r.sum[:]) && h.err == nil {
			h.err = fmt.Errorf("%w: bytes %d to %d differ from those read first", ErrChanged, r.off, r.end)
		}
		r.h = nil
	}
	h.live = keep
}

// Finish hashes the rest of the file and returns the first read error met
// while filling gaps, or an error wrapping ErrChanged.
func (h *PassHasher) Finish() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.activate()
	h.fill(h.size)
	if h.err == nil && (len(h.live) > 0 || h.next < len(h.early)) {
		h.err = fmt.Errorf("%w: bytes were read past its %d bytes", ErrChanged, h.size)
	}
	return h.err
}

// toWindow keeps the last windowSize bytes of b, hashed at offset at.
func (h *PassHasher) toWindow(b []byte, at int64) {
	if h.win == nil {
		h.win = make([]byte, windowSize)
	}
	if len(b) > windowSize {
		at += int64(len(b) - windowSize)
		b = b[len(b)-windowSize:]
	}
	for len(b) > 0 {
		i := int(at % windowSize)
		c := copy(h.win[i:], b)
		b, at = b[c:], at+int64(c)
	}
	h.winLen = min(h.winLen+int(at-h.pos), windowSize)
}

// fromWindow fills p with the bytes hashed at offset at.
func (h *PassHasher) fromWindow(p []byte, at int64) {
	for len(p) > 0 {
		i := int(at % windowSize)
		c := copy(p, h.win[i:])
		p, at = p[c:], at+int64(c)
	}
}
