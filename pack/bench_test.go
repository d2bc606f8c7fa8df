package pack

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rsdump/rsdump/internal/unixnano"
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

// BenchmarkChangeJoin1M measures the memory of a --changes comparison of
// a million files against a million-file state, every file updated: the
// worst case for the chronological sort of the changes. It reports the
// peak heap in use, sampled every 5 ms, which the merge-join and the
// external sort keep bounded. go test -run - -bench ChangeJoin1M ./pack
func BenchmarkChangeJoin1M(b *testing.B) {
	const n = 1_000_000
	dir := b.TempDir()
	rel := func(i int) string { return fmt.Sprintf("d%04d/f%06d.bin", i/128, i) }
	sw, err := newStateWriter(dirOutput(b, dir), stateHead{Version: 1, Time: hour(0)})
	if err != nil {
		b.Fatal(err)
	}
	for i := range n {
		if err := sw.add(record{Rel: rel(i), Size: 4096, Mtime: unixnano.Of(hour(-1)), Hash: "sha-256:" + strings.Repeat("0", 64), Type: "application/octet-stream"}); err != nil {
			b.Fatal(err)
		}
	}
	if err := sw.commit(); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		peak := samplePeakHeap()
		s, _, err := openState(filepath.Join(dir, StateName))
		if err != nil {
			b.Fatal(err)
		}
		o := chgOptions(1)
		o.setDefaults()
		r := &run{opts: &o, dir: dir, out: dirOutput(b, dir), src: dir, at: hour(1), chg: &changeRun{base: &baseline{src: s, time: hour(0)}}}
		changes := newSorter(dir, byTime)
		f, _ := os.CreateTemp(dir, ".rsdump-walk-*.tmp")
		d := &differ{r: r, base: s, state: newRecWriter(f), changes: changes, from: unixnano.Of(hour(0)), at: unixnano.Of(hour(1))}
		if err := d.advance(); err != nil {
			b.Fatal(err)
		}
		mt := hour(0).Add(time.Minute)
		for i := range n {
			if err := d.visit(item{rel: rel(i), size: 4096, mtime: mt.Add(time.Duration(i%1000) * time.Second), mode: 0o644}); err != nil {
				b.Fatal(err)
			}
		}
		src, err := changes.sorted()
		if err != nil {
			b.Fatal(err)
		}
		count := 0
		for {
			_, ok, err := src.next()
			if err != nil {
				b.Fatal(err)
			}
			if !ok {
				break
			}
			count++
		}
		changes.close()
		s.close()
		f.Close()
		os.Remove(f.Name())
		if count != n {
			b.Fatalf("%d changes, want %d", count, n)
		}
		b.ReportMetric(float64(peak())/1e6, "peak-heap-MB")
	}
}

// samplePeakHeap samples HeapInuse until the returned function is
// called, which returns the highest value seen.
func samplePeakHeap() func() uint64 {
	var peak atomic.Uint64
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		var m runtime.MemStats
		for {
			runtime.ReadMemStats(&m)
			if m.HeapInuse > peak.Load() {
				peak.Store(m.HeapInuse)
			}
			select {
			case <-done:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	return func() uint64 {
		close(done)
		<-stopped
		return peak.Load()
	}
}
