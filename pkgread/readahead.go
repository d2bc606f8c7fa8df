package pkgread

import (
	"fmt"
	"io"
	"os"
	"sync"
)

// OpenLocation opens a package file and returns it with its size and a
// function that closes it. Remote packages are fetched first
// (transfer/pkgfetch).
func OpenLocation(loc string) (io.ReaderAt, int64, func() error, error) {
	f, err := os.Open(loc)
	if err != nil {
		return nil, 0, nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, 0, nil, fmt.Errorf("%s: not a regular file", loc)
	}
	return newReadAhead(f, fi.Size(), ReadAheadSize), fi.Size(), f.Close, nil
}

// readAhead serves the small reads a package's entries cost (a local
// header, a few bytes of data, a data descriptor: several per entry) from
// one large read of the file, since the package is read front to back: a
// package of 50,000 small files costs some hundred reads, not 150,000.
// Reads of a quarter of its buffer or more go straight to the file.
type readAhead struct {
	ra     io.ReaderAt
	size   int64
	bufLen int
	mu     sync.Mutex
	buf    []byte
	off    int64 // the file offset of buf[0]
	n      int   // valid bytes in buf
}

// ReadAheadSize is the read-ahead buffer of a package read from a file.
const ReadAheadSize = 1 << 20

// ReadAhead serves the small reads of ra, a package of size bytes, from
// large reads, as OpenLocation's file does: for a package read from
// elsewhere than a local file (a download in progress, transfer/pkgfetch).
// Its buffer is of bufLen bytes, at most ReadAheadSize (a file's), and
// reads of a quarter of that or more go straight to ra: a package held in
// memory costs no system call a read, and with a small buffer a
// bitstream's bytes are copied out of it once, not into the buffer first.
func ReadAhead(ra io.ReaderAt, size int64, bufLen int) io.ReaderAt {
	return newReadAhead(ra, size, min(bufLen, ReadAheadSize))
}

func newReadAhead(ra io.ReaderAt, size int64, bufLen int) *readAhead {
	return &readAhead{ra: ra, size: size, bufLen: bufLen}
}

// ReadAt implements io.ReaderAt.
func (r *readAhead) ReadAt(p []byte, off int64) (int, error) {
	if len(p) >= r.bufLen/4 || off < 0 {
		return r.ra.ReadAt(p, off)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if off < r.off || off+int64(len(p)) > r.off+int64(r.n) {
		if err := r.fill(off); err != nil && off+int64(len(p)) > r.off+int64(r.n) {
			n := copy(p, r.window(off))
			return n, err
		}
	}
	return copy(p, r.window(off)), nil
}

// fill reads the buffer's worth of the file from off.
func (r *readAhead) fill(off int64) error {
	if r.buf == nil {
		r.buf = make([]byte, r.bufLen)
	}
	n, err := r.ra.ReadAt(r.buf[:min(int64(len(r.buf)), max(r.size-off, 0))], off)
	r.off, r.n = off, n
	if err == nil && off+int64(n) >= r.size {
		err = io.EOF
	}
	return err
}

// window is the buffered bytes from off.
func (r *readAhead) window(off int64) []byte {
	if off >= r.off+int64(r.n) {
		return nil
	}
	return r.buf[off-r.off : r.n]
}
