package zipw

import (
	"archive/zip"
	"bytes"
	"hash/crc32"
	"io"
	"sort"
	"testing"
)

// rleBuffer stores runs of repeated bytes, so a test can write and read
// back a 5 GiB archive of mostly zeros in little memory (the idea of
// archive/zip's own zip_test.go).
type rleBuffer struct{ runs []run }

type run struct {
	off, n int64
	b      byte
}

func (r *rleBuffer) size() int64 {
	if len(r.runs) == 0 {
		return 0
	}
	last := r.runs[len(r.runs)-1]
	return last.off + last.n
}

func (r *rleBuffer) Write(p []byte) (int, error) {
	if n := len(r.runs); n > 0 && len(p) > 0 && r.runs[n-1].b == p[0] && bytes.Count(p, p[:1]) == len(p) {
		r.runs[n-1].n += int64(len(p)) // a whole run: the common case
		return len(p), nil
	}
	for _, c := range p {
		if n := len(r.runs); n > 0 && r.runs[n-1].b == c {
			r.runs[n-1].n++
			continue
		}
		r.runs = append(r.runs, run{off: r.size(), n: 1, b: c})
	}
	return len(p), nil
}

func (r *rleBuffer) ReadAt(p []byte, off int64) (int, error) {
	i := sort.Search(len(r.runs), func(i int) bool { return r.runs[i].off+r.runs[i].n > off })
	n := 0
	for ; i < len(r.runs) && n < len(p); i++ {
		ru := r.runs[i]
		for o := max(off+int64(n), ru.off); o < ru.off+ru.n && n < len(p); o++ {
			p[n] = ru.b
			n++
		}
	}
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// zeros is a reader of n zero bytes, fast to write through the RLE sink.
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

// TestZip64RLE writes a raw 4.5 GiB entry and a small one after it, so
// that sizes and an offset overflow 32 bits, and reads both back with
// archive/zip, CRC included.
func TestZip64RLE(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping 4.5 GiB ZIP64 round trip in -short mode")
	}
	const size = 4<<30 + 512<<20
	crc := crc32.NewIEEE()
	io.Copy(crc, &zeros{size})
	var sink rleBuffer
	w := NewWriter(&sink, 1)
	if err := w.WriteRaw(Header{Name: "zeros", Modified: mtime}, crc.Sum32(), size, size, &zeros{size}); err != nil {
		t.Fatal(err)
	}
	small := []byte("past 4 GiB")
	w.WriteRaw(Header{Name: "small", Modified: mtime}, crc32.ChecksumIEEE(small), int64(len(small)), int64(len(small)), &sliceReader{small})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	zr, err := zip.NewReader(&sink, sink.size())
	if err != nil {
		t.Fatal(err)
	}
	if zr.File[0].UncompressedSize64 != size || zr.File[1].Name != "small" {
		t.Fatalf("entries %q %d", zr.File[0].Name, zr.File[0].UncompressedSize64)
	}
	if got := readAll(t, zr.File[1]); string(got) != string(small) {
		t.Errorf("small entry %q", got)
	}
	rc, _ := zr.File[0].Open()
	if n, err := io.Copy(io.Discard, rc); err != nil || n != size {
		t.Errorf("big entry: %d bytes, %v", n, err)
	}
}

type sliceReader struct{ b []byte }

func (s *sliceReader) Read(p []byte) (int, error) {
	if len(s.b) == 0 {
		return 0, io.EOF
	}
	n := copy(p, s.b)
	s.b = s.b[n:]
	return n, nil
}
