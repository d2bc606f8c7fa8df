package zipw

import (
	"archive/zip"
	"io"
	"testing"

	"github.com/rsdump/rsdump/internal/racetest"
	"github.com/rsdump/rsdump/internal/ziptest"
)

// TestZip64Sparse writes raw entries of 2³²-2 bytes (no ZIP64 field), of
// exactly 2³²-1 (the first size that needs one) and of 4.5 GiB, each
// through the real write path followed by a small entry past 4 GiB, and
// reads both back with archive/zip, CRC included.
func TestZip64Sparse(t *testing.T) {
	t.Parallel()
	racetest.SkipLarge(t, "ZIP64 round trips of 4 GiB and more")
	for _, size := range []int64{u32max - 1, u32max, 4<<30 + 512<<20} {
		var sink ziptest.Sparse
		w := NewWriter(&sink, 1)
		if err := w.WriteRaw(Header{Name: "zeros", Modified: mtime}, ziptest.ZerosCRC(size), size, size, ziptest.Zeros(size)); err != nil {
			t.Fatal(err)
		}
		small := []byte("past 4 GiB")
		writeRawClose(t, w, "small", small)
		zr, err := zip.NewReader(&sink, sink.Size())
		if err != nil {
			t.Fatalf("%d: %v", size, err)
		}
		f := zr.File[0]
		if f.UncompressedSize64 != uint64(size) || f.CompressedSize64 != uint64(size) || zr.File[1].Name != "small" {
			t.Fatalf("%d: entries %q %d %d", size, f.Name, f.CompressedSize64, f.UncompressedSize64)
		}
		if _, zip64 := zip64Fields(f.Extra); zip64 != (size >= u32max) {
			t.Errorf("%d: ZIP64 field present %v", size, zip64)
		}
		if got := readAll(t, zr.File[1]); string(got) != string(small) {
			t.Errorf("%d: small entry %q", size, got)
		}
		rc, _ := f.Open()
		if n, err := io.Copy(io.Discard, rc); err != nil || n != size {
			t.Errorf("%d: big entry: %d bytes, %v", size, n, err)
		}
	}
}
