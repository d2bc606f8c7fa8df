package pkgread_test

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"io"
	"sync"
	"testing"

	"github.com/rsdump/rsdump/finding"
	"github.com/rsdump/rsdump/internal/verifytest"
	"github.com/rsdump/rsdump/pkgread"
)

// swapReader serves before until swap is called (once the package is
// opened, before hashing starts), then after: a file that changes between
// the first reads and the hash pass.
type swapReader struct {
	before, after []byte
	mu            sync.Mutex
	swapped       bool
}

func (s *swapReader) swap() {
	s.mu.Lock()
	s.swapped = true
	s.mu.Unlock()
}

func (s *swapReader) ReadAt(p []byte, off int64) (int, error) {
	s.mu.Lock()
	b := s.before
	if s.swapped {
		b = s.after
	}
	s.mu.Unlock()
	return bytes.NewReader(b).ReadAt(p, off)
}

func TestPassHasherRefusesChangedTail(t *testing.T) {
	t.Parallel()
	good, evil := verifytest.TailSwap(t)
	for _, tc := range []struct {
		name   string
		before []byte
		want   error
	}{
		{"unchanged", good, nil},
		{"changed", evil, pkgread.ErrChanged},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := sha256.New()
			sw := &swapReader{before: tc.before, after: good}
			ph := pkgread.NewPassHasher(sw, int64(len(good)), h)
			pkg, err := pkgread.OpenPackage(ph, int64(len(good)), "p.zip", "", pkgread.Limits{}, finding.NewReporter(nil))
			if err != nil {
				t.Fatal(err)
			}
			sw.swap()
			ph.Start()
			for _, b := range pkg.InZipOrder() {
				pkg.Read(b, io.Discard)
			}
			err = ph.Finish()
			if !errors.Is(err, tc.want) || (err == nil) != (tc.want == nil) {
				t.Fatalf("Finish = %v, want %v", err, tc.want)
			}
			if sum := sha256.Sum256(good); !bytes.Equal(h.Sum(nil), sum[:]) {
				t.Errorf("hashed bytes are not the file's")
			}
		})
	}
}

// fickleReader answers each read with bytes that differ from the last
// answer: a file that changes under every read.
type fickleReader struct {
	size  int64
	reads int
}

func (f *fickleReader) ReadAt(p []byte, off int64) (int, error) {
	f.reads++
	n := 0
	for ; n < len(p) && off+int64(n) < f.size; n++ {
		p[n] = byte(f.reads)
	}
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// A read of bytes just hashed (archive/zip reads a local header again to
// find the data) gets the bytes hashed, however the file changed since.
func TestPassHasherRereadsGiveHashedBytes(t *testing.T) {
	t.Parallel()
	var hashed bytes.Buffer
	f := &fickleReader{size: 300 << 10}
	ph := pkgread.NewPassHasher(f, f.size, &hashed)
	ph.Start()
	a := make([]byte, 100)
	ph.ReadAt(a, 200<<10) // hashes [0, 200 KiB+100) through the gap and this read
	for _, c := range []struct{ off, n int64 }{{200 << 10, 100}, {200<<10 - 1000, 1100}, {200<<10 + 50, 100}} {
		b := make([]byte, c.n)
		ph.ReadAt(b, c.off)
		want := hashed.Bytes()[c.off:min(c.off+c.n, int64(hashed.Len()))]
		if !bytes.Equal(b[:len(want)], want) {
			t.Errorf("read of %d bytes at %d: not the bytes hashed", c.n, c.off)
		}
	}
	if err := ph.Finish(); err != nil {
		t.Fatal(err)
	}
	if int64(hashed.Len()) != f.size {
		t.Errorf("hashed %d bytes of %d", hashed.Len(), f.size)
	}
}
