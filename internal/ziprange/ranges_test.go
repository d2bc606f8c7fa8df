package ziprange

import (
	"bytes"
	"context"
	"fmt"
	"hash/crc32"
	"io"
	"testing"
	"time"

	"github.com/rsdump/rsdump/internal/mirrortest"
	"github.com/rsdump/rsdump/internal/ziptest"
	"github.com/rsdump/rsdump/internal/zipw"
	"github.com/rsdump/rsdump/transfer"
)

// sparsePackage is a package as pack writes it, held sparse: n stored
// bitstreams of size zeros each, in manifest order, then manifest.xml.
// It returns the manifest's names.
func sparsePackage(t *testing.T, n int, size int64) (*ziptest.Sparse, []string) {
	t.Helper()
	s := &ziptest.Sparse{}
	w := zipw.NewWriter(s, 1)
	crc := ziptest.ZerosCRC(size)
	var manifest []string
	for i := range n {
		name := fmt.Sprintf("resources/collection/item-%05d/file.bin", i)
		if err := w.WriteRaw(zipw.Header{Name: name, Modified: mtime}, crc, size, size, ziptest.Zeros(size)); err != nil {
			t.Fatal(err)
		}
		manifest = append(manifest, name)
	}
	m := []byte("<urlset/>")
	if err := w.WriteRawBytes(zipw.Header{Name: "manifest.xml", Modified: mtime}, crc32.ChecksumIEEE(m), int64(len(m)), m); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return s, manifest
}

// fetchOne reads the manifest's i-th bitstream of the package s through
// transfer.Ranges from a loopback HTTP mirror, and returns the bytes
// fetched.
func fetchOne(t *testing.T, s *ziptest.Sparse, manifest []string, i int) int64 {
	t.Helper()
	srv, _ := mirrortest.Server(io.NewSectionReader(s, 0, s.Size()), s.Size(), "p.zip")
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := transfer.New(transfer.Options{}).Ranges(ctx, transfer.File{Name: "p.zip", Size: s.Size(), Mirrors: []transfer.Mirror{{URL: srv.URL + "/p.zip"}}})
	if err != nil {
		t.Fatal(err)
	}
	d, err := ReadDir(r, r.Size())
	if err != nil {
		t.Fatal(err)
	}
	found, err := d.Find(manifest[i:i+1], ListOrder(manifest))
	if err != nil {
		t.Fatal(err)
	}
	e := found[manifest[i]]
	got, err := readEntry(d, e)
	if err != nil {
		t.Fatal(err)
	}
	if uint64(len(got)) != e.UncompressedSize || !bytes.Equal(got, make([]byte, len(got))) {
		t.Fatalf("%s: %d bytes, not the %d zeros written", e.Name, len(got), e.UncompressedSize)
	}
	return r.Fetched()
}
