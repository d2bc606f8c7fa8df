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

// TestOpenOneRequest: through transfer.Ranges, Open and reading an entry
// of 100 KiB take one request: its local header and its data come in one
// span. Reading a span of a stored entry (Span) takes one request of that
// span's bytes, with its local header read once before.
func TestOpenOneRequest(t *testing.T) {
	t.Parallel()
	s, manifest := sparsePackage(t, 50, 100<<10)
	srv, m := mirrortest.Server(io.NewSectionReader(s, 0, s.Size()), s.Size(), "p.zip")
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
	found, err := d.Find(manifest, ListOrder(manifest))
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range []int{7, 30, 31} {
		before := m.Requests.Load()
		if got, err := readEntry(d, found[manifest[i]]); err != nil || len(got) != 100<<10 {
			t.Fatalf("entry %d: %d bytes, %v", i, len(got), err)
		}
		if n := m.Requests.Load() - before; n != 1 {
			t.Errorf("entry %d: %d requests, want 1", i, n)
		}
	}
	st, err := d.OpenStored(found[manifest[40]])
	if err != nil {
		t.Fatal(err)
	}
	before, fetched := m.Requests.Load(), r.Fetched()
	p := make([]byte, 1000)
	if err := st.Span(p, 5000); err != nil || !bytes.Equal(p, make([]byte, 1000)) {
		t.Fatalf("Span: %v", err)
	}
	if n, b := m.Requests.Load()-before, r.Fetched()-fetched; n != 1 || b != 1000 {
		t.Errorf("Span of 1000 bytes: %d requests, %d bytes", n, b)
	}
	if err := st.Span(p, 100<<10-999); err == nil {
		t.Error("Span past the entry's end read")
	}
}
