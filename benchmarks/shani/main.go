//go:build amd64 && !purego

// Command shani measures the SHA256RNDS2 instruction of the SHA extensions,
// which bounds every SHA-256 rsdump computes on amd64: its latency (one
// dependency chain) and its reciprocal throughput (several independent
// chains), in core cycles, calibrated against a chain of dependent ADDs
// (one cycle each). From these it derives what one more SHA-256 stream over
// the same bytes must cost at least, which is the floor of what Metalink
// piece hashes add to `rsdump pack` (issue 4, benchmarks/README.md).
//
// It needs the SHA extensions: run it with `go run ./benchmarks/shani`.
package main

import (
	"flag"
	"fmt"
	"os"
	"sort"
	"time"

	"github.com/rsdump/rsdump/internal/digest"
)

func addChain(n int)
func rounds1(n int)
func rounds2(n int)
func rounds4(n int)

// perLoop is the number of timed instructions in each loop iteration.
const perLoop = 8

func main() {
	iters := flag.Int("n", 20_000_000, "loop iterations per timing")
	runs := flag.Int("runs", 7, "timings per loop; the median is kept")
	flag.Parse()
	if !digest.SHANI() {
		fmt.Fprintln(os.Stderr, "shani: this CPU has no SHA extensions")
		os.Exit(1)
	}
	ns := func(f func(int)) float64 { return median(*runs, func() float64 { return timeLoop(f, *iters) }) }
	cycle := ns(addChain)
	lat, tp2, tp4 := ns(rounds1)/cycle, ns(rounds2)/cycle, ns(rounds4)/cycle
	tp := min(tp2, tp4)
	fmt.Printf("clock about %.2f GHz (dependent ADD chain)\n", 1/cycle)
	fmt.Printf("SHA256RNDS2: latency %.1f cycles, reciprocal throughput %.1f cycles (2 chains %.1f, 4 chains %.1f)\n", lat, tp, tp2, tp4)

	// A 64-byte block takes 32 SHA256RNDS2 in one dependency chain.
	one := 32 * lat
	two := max(32*lat, 64*tp)
	extra := two - one
	blocksPerGiB := float64(1<<30) / 64
	fmt.Printf("one SHA-256 stream: at least %.0f cycles per block (%.0f MB/s per core)\n", one, 64/(one*cycle)*1e3)
	fmt.Printf("two streams over the same blocks on one core: at least %.0f cycles per block, %.2f times one\n", two, two/one)
	fmt.Printf("one more stream beside a latency-bound one: at least %.0f cycles per block, %.2f CPU-s per GiB\n",
		extra, extra*cycle*blocksPerGiB/1e9)
}

// timeLoop returns nanoseconds per timed instruction.
func timeLoop(f func(int), iters int) float64 {
	start := time.Now()
	f(iters)
	return float64(time.Since(start).Nanoseconds()) / float64(iters*perLoop)
}

func median(n int, f func() float64) float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = f()
	}
	sort.Float64s(v)
	return v[n/2]
}
