package transfer

import (
	"bytes"
	"context"
	"testing"

	mt "github.com/rsdump/rsdump/internal/mirrortest"
)

// BenchmarkGet fetches 64 MiB from three uncapped loopback mirrors, to
// profile the client's CPU per byte (the mirrors run in-process too).
func BenchmarkGet(b *testing.B) {
	data := payload(64<<20, 99)
	f := fileFor("f.bin", data, 1<<20)
	for range 3 {
		s, _ := mt.Server(bytes.NewReader(data), int64(len(data)), "f.bin")
		b.Cleanup(s.Close)
		f.Mirrors = append(f.Mirrors, Mirror{URL: s.URL})
	}
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := New(Options{}).Get(context.Background(), b.TempDir(), []File{f}); err != nil {
			b.Fatal(err)
		}
	}
}
