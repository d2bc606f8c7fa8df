package verify

import (
	"io"
	"sync"
)

// PassHasher is an io.ReaderAt that hashes a file front to back as the
// bitstreams are read, so that a package's own hash is checked in the same
// pass as its entries. Reads at or before the hashed prefix pass through;
// a read beyond it first hashes the gap (local headers, data descriptors,
// entries that were skipped). Reads before Start (the central directory
// and manifest at the end of the file) are not hashed, and Finish hashes
// whatever was never read.
type PassHasher struct {
	ra     io.ReaderAt
	size   int64
	w      io.Writer
	mu     sync.Mutex
	active bool
	pos    int64 // bytes [0,pos) have been hashed
	gap    []byte
	err    error
}

// NewPassHasher hashes the size bytes of ra into w.
func NewPassHasher(ra io.ReaderAt, size int64, w io.Writer) *PassHasher {
	return &PassHasher{ra: ra, size: size, w: w}
}

// Start begins hashing with the next read.
func (h *PassHasher) Start() {
	h.mu.Lock()
	h.active = true
	h.mu.Unlock()
}

// ReadAt implements io.ReaderAt.
func (h *PassHasher) ReadAt(p []byte, off int64) (int, error) {
	n, err := h.ra.ReadAt(p, off)
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.active || h.err != nil {
		return n, err
	}
	if off > h.pos {
		h.fill(off)
	}
	if h.err == nil && off <= h.pos && off+int64(n) > h.pos {
		h.w.Write(p[h.pos-off : n])
		h.pos = off + int64(n)
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
		h.w.Write(b[:n])
		h.pos += int64(n)
		if err != nil && h.pos < to {
			h.err = err
		}
	}
}

// Finish hashes the rest of the file and returns the first read error met
// while filling gaps.
func (h *PassHasher) Finish() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.active = true
	h.fill(h.size)
	return h.err
}
