package pkgread

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// countingReaderAt counts the reads that reach the file.
type countingReaderAt struct {
	*bytes.Reader
	reads int
}

func (c *countingReaderAt) ReadAt(p []byte, off int64) (int, error) {
	c.reads++
	return c.Reader.ReadAt(p, off)
}

// TestReadAhead compares every answer of readAhead with the file's own,
// for reads front to back, backwards, across the end and past it, and
// checks that small reads front to back reach the file rarely.
func TestReadAhead(t *testing.T) {
	data := make([]byte, 3*readAheadSize+12345)
	for i := range data {
		data[i] = byte(i * 7)
	}
	file := &countingReaderAt{Reader: bytes.NewReader(data)}
	ra := newReadAhead(file, int64(len(data)))
	rng := rand.New(rand.NewPCG(1, 2))
	check := func(off int64, n int) {
		t.Helper()
		got, want := make([]byte, n), make([]byte, n)
		gn, gerr := ra.ReadAt(got, off)
		wn, werr := bytes.NewReader(data).ReadAt(want, off)
		if gn != wn || (gerr == nil) != (werr == nil) || !bytes.Equal(got[:gn], want[:wn]) {
			t.Fatalf("ReadAt(%d bytes at %d) = %d, %v; want %d, %v", n, off, gn, gerr, wn, werr)
		}
	}
	for off := int64(0); off < int64(len(data)); off += 41 + 30 {
		check(off, 30)
		check(off+30, 41)
	}
	if file.reads > 8 {
		t.Errorf("%d reads of the file for a front-to-back pass of small reads, want about 4", file.reads)
	}
	for range 2000 {
		check(rng.Int64N(int64(len(data))+100), rng.IntN(readAheadSize/2))
	}
	check(int64(len(data))-10, 20) // across the end
	check(int64(len(data)), 1)     // at the end
	check(int64(len(data))+5, 1)   // past it
}
