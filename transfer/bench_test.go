package transfer

import (
	"context"
	"testing"
)

// BenchmarkGet fetches 64 MiB from three uncapped loopback mirrors, to
// profile the client's CPU per byte (the mirrors run in-process too).
func BenchmarkGet(b *testing.B) {
	data := payload(64<<20, 99)
	f := fileFor("f.bin", data, 1<<20)
	t := &testing.T{}
	for range 3 {
		s, _ := serve(t, data)
		defer s.Close()
		f.Mirrors = append(f.Mirrors, Mirror{URL: s.URL})
	}
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		dir := b.TempDir()
		if _, err := New(Options{}).Get(context.Background(), dir, []File{f}); err != nil {
			b.Fatal(err)
		}
	}
}
