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
// checks that small reads front to back reach the file rarely, and reads
// of a quarter of the buffer or more once each; with a local file's
// buffer and a held download's (pkgfetch).
func TestReadAhead(t *testing.T) {
	t.Parallel()
	for _, bufLen := range []int{ReadAheadSize, 16 << 10} {
		testReadAhead(t, bufLen)
	}
}

func testReadAhead(t *testing.T, bufLen int) {
	direct := bufLen / 4
	data := make([]byte, 3*ReadAheadSize+12345)
	for i := range data {
		data[i] = byte(i * 7)
	}
	file := &countingReaderAt{Reader: bytes.NewReader(data)}
	ra := newReadAhead(file, int64(len(data)), bufLen)
	rng := rand.New(rand.NewPCG(1, 2))
	check := func(off int64, n int) {
		t.Helper()
		got, want := make([]byte, n), make([]byte, n)
		gn, gerr := ra.ReadAt(got, off)
		wn, werr := bytes.NewReader(data).ReadAt(want, off)
		if gn != wn || (gerr == nil) != (werr == nil) || !bytes.Equal(got[:gn], want[:wn]) {
			t.Fatalf("direct %d: ReadAt(%d bytes at %d) = %d, %v; want %d, %v", direct, n, off, gn, gerr, wn, werr)
		}
	}
	for off := int64(0); off < int64(len(data)); off += 41 + 30 {
		check(off, 30)
		check(off+30, 41)
	}
	if most := 2*len(data)/bufLen + 2; file.reads > most {
		t.Errorf("direct %d: %d reads of the file for a front-to-back pass of small reads, want at most %d", direct, file.reads, most)
	}
	// Headers and the bitstreams after them: each bitstream is one read
	// of the file, its header a read of the buffer's now and then.
	before := file.reads
	for off := int64(0); off+int64(direct)+30 <= int64(len(data)); off += int64(direct) + 30 {
		check(off, 30)
		check(off+30, direct)
	}
	if n, most := file.reads-before, 2*len(data)/(direct+30)+8; n > most {
		t.Errorf("direct %d: %d reads of the file for a pass of headers and %d-byte reads, want at most %d", direct, n, direct, most)
	}
	for range 2000 {
		check(rng.Int64N(int64(len(data))+100), rng.IntN(ReadAheadSize/2))
	}
	check(int64(len(data))-10, 20) // across the end
	check(int64(len(data)), 1)     // at the end
	check(int64(len(data))+5, 1)   // past it
}
