package pack

import (
	"context"
	"os"
	"testing"
)

// BenchmarkPackDir packs the directory named by RSDUMP_BENCH_SRC (store,
// sha-256), for profiling: go test -bench PackDir -cpuprofile cpu.out.
func BenchmarkPackDir(b *testing.B) {
	src := os.Getenv("RSDUMP_BENCH_SRC")
	if src == "" {
		b.Skip("set RSDUMP_BENCH_SRC to a directory to pack")
	}
	o := Options{BaseURL: "http://h/", Compress: Store}
	for b.Loop() {
		out := b.TempDir()
		res, err := Pack(context.Background(), src, out, o)
		if err != nil {
			b.Fatal(err)
		}
		b.SetBytes(res.Bytes)
		os.RemoveAll(out)
	}
}
