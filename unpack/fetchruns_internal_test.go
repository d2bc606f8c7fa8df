package unpack

import (
	"context"
	"strings"
	"testing"

	"github.com/rsdump/rsdump/pkgread"
	"github.com/rsdump/rsdump/resourcesync"
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

// An early batch the survey would plan otherwise is not adopted, nor
// staged again (its findings and package are counted already): the
// run's batch fails, naming the document.
func TestEarlyBatchPlannedOtherwise(t *testing.T) {
	e := failedBatch(nil)
	e.items = []listItem{{n: 1, e: resourcesync.URL{Loc: "http://127.0.0.1:9/a"}}}
	l := &listRun{early: &earlyBatch{items: e.items, staged: e}}
	items := []listItem{{n: 1, e: resourcesync.URL{Loc: "http://127.0.0.1:9/b"}}}
	s := l.stage(context.Background(), "http://127.0.0.1:9/list.xml", items, true)
	if s == e {
		t.Fatal("the early batch of another entry was adopted")
	}
	if _, err := s.wait(); err == nil || !strings.Contains(err.Error(), "http://127.0.0.1:9/list.xml: the first batch staged during the survey is not the one") {
		t.Fatalf("err = %v", err)
	}
	if l.early != nil {
		t.Error("the early batch is still held")
	}
	e.items = items
	l.early = &earlyBatch{items: items, staged: e}
	if s := l.stage(context.Background(), "http://127.0.0.1:9/list.xml", items, true); s != e {
		t.Error("the early batch of the same entries was not adopted")
	}
}
