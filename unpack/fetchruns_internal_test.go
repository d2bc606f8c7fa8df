package unpack

import (
	"testing"

	"github.com/rsdump/rsdump/pkgread"
)

// A resource whose entry gives no length (up to --max-resource-size, so
// maybe large) is a run of its own, as a large one is: the small ones
// after it are for other workers, not queued behind it on its connection.
func TestFetchRunsNoLengthAlone(t *testing.T) {
	p := &pkgRun{}
	for _, n := range []int64{-1, 10, 10, 1 << 20, 10, -1} {
		p.actions = append(p.actions, &action{b: &pkgread.Bitstream{Length: n}})
	}
	r := &fetchRuns{p: p, depth: 8}
	var got []int
	for run := r.take(); len(run) > 0; run = r.take() {
		got = append(got, len(run))
	}
	want := []int{1, 2, 1, 1, 1}
	if len(got) != len(want) {
		t.Fatalf("runs of %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("runs of %v, want %v", got, want)
		}
	}
}

// Options.Pipeline is bounded: a library caller's 1,000 writes no more
// GETs ahead than --pipeline may.
func TestPipelineDepthBounded(t *testing.T) {
	for _, c := range []struct{ opt, want int }{{0, DefaultPipeline}, {-3, 1}, {1, 1}, {20, 20}, {1000, MaxPipeline}} {
		if got := pipelineDepth(c.opt); got != c.want {
			t.Errorf("Pipeline %d: depth %d, want %d", c.opt, got, c.want)
		}
	}
}
