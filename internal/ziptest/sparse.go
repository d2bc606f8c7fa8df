package ziptest

import (
	"bytes"
	"hash/crc32"
	"io"
	"sort"
)

// Sparse is an archive in memory but for its blocks of zeros, so that one
// of several GiB of zeros fits in a few MiB (the idea of archive/zip's own
// zip_test.go). Write appends; ReadAt reads anywhere.
type Sparse struct {
	size   int64
	chunks []chunk // in order of offset
}

type chunk struct {
	off int64
	b   []byte
}

const sparseBlock = 512

var zeroBlock = make([]byte, 1<<20)

// Size returns the number of bytes written.
func (s *Sparse) Size() int64 { return s.size }

func (s *Sparse) Write(p []byte) (int, error) {
	if len(p) <= len(zeroBlock) && bytes.Equal(p, zeroBlock[:len(p)]) {
		s.size += int64(len(p))
		return len(p), nil
	}
	for b := p; len(b) > 0; {
		k := min(len(b), sparseBlock-int(s.size%sparseBlock))
		if !bytes.Equal(b[:k], zeroBlock[:k]) {
			if n := len(s.chunks); n > 0 && s.chunks[n-1].off+int64(len(s.chunks[n-1].b)) == s.size {
				s.chunks[n-1].b = append(s.chunks[n-1].b, b[:k]...)
			} else {
				s.chunks = append(s.chunks, chunk{s.size, bytes.Clone(b[:k])})
			}
		}
		s.size += int64(k)
		b = b[k:]
	}
	return len(p), nil
}

func (s *Sparse) ReadAt(p []byte, off int64) (int, error) {
	if off >= s.size {
		return 0, io.EOF
	}
	n := int(min(int64(len(p)), s.size-off))
	clear(p[:n])
	i := sort.Search(len(s.chunks), func(i int) bool { return s.chunks[i].off+int64(len(s.chunks[i].b)) > off })
	for ; i < len(s.chunks) && s.chunks[i].off < off+int64(n); i++ {
		c := s.chunks[i]
		lo := max(c.off, off)
		copy(p[lo-off:n], c.b[lo-c.off:])
	}
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// Zeros returns a reader of n zero bytes.
func Zeros(n int64) io.Reader { return &zeros{n} }

type zeros struct{ n int64 }

func (z *zeros) Read(p []byte) (int, error) {
	if z.n == 0 {
		return 0, io.EOF
	}
	k := min(int64(len(p)), z.n)
	clear(p[:k])
	z.n -= k
	return int(k), nil
}

// ZerosCRC returns the CRC-32 (IEEE) of n zero bytes.
func ZerosCRC(n int64) uint32 {
	crc := crc32.NewIEEE()
	io.Copy(crc, Zeros(n))
	return crc.Sum32()
}
