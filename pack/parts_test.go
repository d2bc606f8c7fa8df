package pack

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rsdump/rsdump/finding"
	"github.com/rsdump/rsdump/internal/claim"
	"github.com/rsdump/rsdump/internal/sink"
	"github.com/rsdump/rsdump/layout"
)

// skewedTree writes files under a few prefixes, one of which ("big")
// holds about 40% of the bytes, and returns the source.
func skewedTree(t testing.TB, files int) string {
	t.Helper()
	src := t.TempDir()
	r := rand.New(rand.NewPCG(7, 9))
	for i := range files {
		dir := fmt.Sprintf("d%d/e%d", i%5, i%3)
		size := 200 + r.IntN(800)
		if i%5 == 0 {
			dir, size = "big/"+fmt.Sprintf("s%d", i%4), size*3
		}
		os.MkdirAll(filepath.Join(src, dir), 0o755)
		os.WriteFile(filepath.Join(src, dir, fmt.Sprintf("f%03d", i)), bytes.Repeat([]byte{byte('a' + i%26)}, size), 0o644)
	}
	return src
}

func partOptions() Options {
	o := testOptions()
	o.At = time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	o.MaxEntries = 4
	return o
}

// workers runs n workers of a claimed-parts run at once, each with its
// events counted, and returns their results.
func workers(t *testing.T, src, out string, n, parts int, o Options) []*Result {
	t.Helper()
	res := make([]*Result, n)
	var wg sync.WaitGroup
	for k := range n {
		wg.Go(func() {
			w := o
			w.Shard, w.Shards, w.Parts, w.Worker = k+1, n, parts, fmt.Sprintf("worker %d", k+1)
			var err error
			if res[k], err = Pack(context.Background(), src, out, w); err != nil {
				t.Errorf("worker %d: %v", k+1, err)
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	return res
}

// Three workers share eight parts: each part is packed once, by one of
// them; the merge then writes a Resource List and state byte for byte
// those of one unsharded pack of the tree, and removes the plan, the
// journals and the claims.
func TestPartsPackedOnceAndMerged(t *testing.T) {
	t.Parallel()
	src := skewedTree(t, 90)
	out := t.TempDir()
	o := partOptions()
	res := workers(t, src, out, 3, 8, o)
	var packed []int
	planned := 0
	for _, r := range res {
		packed = append(packed, r.Parts.Packed...)
		if r.Parts.Planned {
			planned++
		}
		if r.Parts.Parts != 8 {
			t.Errorf("a worker's report: %+v", r.Parts)
		}
	}
	slices.Sort(packed)
	if !slices.Equal(packed, []int{1, 2, 3, 4, 5, 6, 7, 8}) || planned != 1 {
		t.Fatalf("parts packed %v, planned by %d workers", packed, planned)
	}
	merged, err := Merge(context.Background(), out, o)
	if err != nil {
		t.Fatal(err)
	}
	if merged.Bitstreams != 90 {
		t.Errorf("merged %d bitstreams", merged.Bitstreams)
	}
	whole := t.TempDir()
	if _, err := Pack(context.Background(), src, whole, o); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{layout.ResourceListName, StateName} {
		if !bytes.Equal(readFile(t, filepath.Join(out, name)), readFile(t, filepath.Join(whole, name))) {
			t.Errorf("%s of the merged parts differs from the unsharded pack's", name)
		}
	}
	left, _ := filepath.Glob(filepath.Join(out, ".rsdump-*"))
	for _, l := range left {
		if filepath.Base(l) != StateName {
			t.Errorf("left after the merge: %s", l)
		}
	}
	if !layout.IsOutput("resourcedump-shard3of8-00001.zip") || layout.IsOutput(partsName) || layout.IsOutput(claimsDir+"shard3of8.done") {
		t.Error("IsOutput and the names of parts")
	}
}

// A worker run again once every part is done packs nothing, says so,
// and a worker given other options than the plan's is refused.
func TestPartsRerunAndOtherOptions(t *testing.T) {
	t.Parallel()
	src := skewedTree(t, 30)
	out := t.TempDir()
	o := partOptions()
	workers(t, src, out, 2, 4, o)
	again := workers(t, src, out, 1, 4, o)[0]
	if len(again.Packages) != 0 || again.Parts.Done != 4 || len(again.Parts.Packed) != 0 {
		t.Errorf("a rerun after every part was done: %d packages, report %+v", len(again.Packages), again.Parts)
	}
	other := o
	other.Shard, other.Shards, other.Parts = 1, 2, 4
	other.Level = 9
	if _, err := Pack(context.Background(), src, out, other); err == nil || !strings.Contains(err.Error(), "planned with other options") {
		t.Errorf("a worker with other options: %v", err)
	}
	other = o
	other.Shard, other.Shards, other.Parts = 1, 2, 6
	if _, err := Pack(context.Background(), src, out, other); err == nil || !strings.Contains(err.Error(), "planned in 4 parts, not 6") {
		t.Errorf("a worker with another --parts: %v", err)
	}
}

// The merge refuses while a part is unclaimed or held, naming each and
// its holder, and writes nothing; once they are packed it merges.
func TestMergeRefusesPartsNotDone(t *testing.T) {
	t.Parallel()
	src := skewedTree(t, 40)
	out := t.TempDir()
	o := partOptions()
	ctx := context.Background()
	// A worker stops after the plan and part 1: parts 2..5 unclaimed.
	w := o
	w.Shard, w.Shards, w.Parts, w.Worker = 1, 1, 5, "worker 1"
	stopAfterOne, cancel := context.WithCancel(ctx)
	w.Events = func(e finding.Event) {
		if p, ok := e.(PartClaimed); ok && p.Part == 2 {
			cancel()
		}
	}
	if _, err := Pack(stopAfterOne, src, out, w); !errors.Is(err, context.Canceled) {
		t.Fatalf("the interrupted worker: %v", err)
	}
	// Part 3 held by a live worker of another machine.
	s, _ := sink.OpenDir(out)
	if _, err := (&claim.Board{Store: s, Dir: claimsDir, Worker: "slurm task 2 of 2 (job 77)", Lease: time.Hour}).Take(ctx, shardTag(3, 5), nil); err != nil {
		t.Fatal(err)
	}
	_, err := Merge(ctx, out, o)
	var se *ShardError
	if !errors.As(err, &se) || !se.Part || !strings.Contains(err.Error(), "4 parts of 5 not done") ||
		!strings.Contains(err.Error(), "part 2 (worker 1") || !strings.Contains(err.Error(), "context canceled") ||
		!strings.Contains(err.Error(), "part 3 (held by slurm task 2 of 2 (job 77) on ") || !strings.Contains(err.Error(), "part 4 (unclaimed)") {
		t.Fatalf("merge with parts not done: %v", err)
	}
	if _, err := os.Stat(filepath.Join(out, layout.DumpName)); err == nil {
		t.Fatal("a refused merge wrote the dump document")
	}
	// The interrupted worker gave part 2 up: a rerun takes it and 4 and
	// 5, and leaves 3 to its holder.
	w.Events = nil
	res, err := Pack(ctx, src, out, w)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Parts.Packed, []int{2, 4, 5}) || len(res.Parts.Held) != 1 || !strings.HasPrefix(res.Parts.Held[0], "part 3 (slurm task 2 of 2") {
		t.Fatalf("the rerun: %+v", res.Parts)
	}
	if _, err := Merge(ctx, out, o); err == nil || !strings.Contains(err.Error(), "1 part of 5 not done: part 3 (held by") {
		t.Fatalf("merge with part 3 held: %v", err)
	}
}

// A part whose worker died is taken over once its lease passed, by a
// rerun of any worker, which reuses the packages the dead worker
// completed; the merge is then that of an unsharded pack.
func TestPartTakenOverAfterLease(t *testing.T) {
	t.Parallel()
	src := skewedTree(t, 60)
	out := t.TempDir()
	o := partOptions()
	ctx := context.Background()
	// The dead worker: it packed part 1 and the first packages of part
	// 2, then died holding part 2 (its claim and journal are left as a
	// kill leaves them: no release).
	dead := o
	dead.Shard, dead.Shards, dead.Parts, dead.Worker, dead.Lease = 1, 2, 3, "dead worker", 2*time.Second
	pl := planOnly(t, src, out, dead)
	s, _ := sink.OpenDir(out)
	board := &claim.Board{Store: s, Dir: claimsDir, Worker: "dead worker", Lease: dead.Lease}
	h, err := board.Take(ctx, shardTag(1, 3), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := packPart(ctx, src, out, dead, pl, 1); err != nil {
		t.Fatal(err)
	}
	h.Done(ctx)
	h2, err := board.Take(ctx, shardTag(2, 3), nil)
	if err != nil {
		t.Fatal(err)
	}
	partial, cancel := context.WithCancel(ctx)
	n := 0
	d2 := dead
	d2.Events = func(e finding.Event) {
		if _, ok := e.(PackageDone); ok {
			if n++; n == 2 {
				cancel()
			}
		}
	}
	if _, err := packPart(partial, src, out, d2, pl, 2); !errors.Is(err, context.Canceled) {
		t.Fatalf("part 2 interrupted: %v", err)
	}
	// Before the lease passes, a worker leaves part 2 to its holder.
	live := o
	live.Shard, live.Shards, live.Parts, live.Worker, live.Lease = 2, 2, 3, "worker 2", time.Minute
	res, err := Pack(ctx, src, out, live)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Parts.Packed, []int{3}) || len(res.Parts.Held) != 1 || !strings.Contains(res.Parts.Held[0], "dead worker") {
		t.Fatalf("before the lease passed: %+v", res.Parts)
	}
	time.Sleep(time.Until(h2.Record().Until) + 50*time.Millisecond)
	var from string
	live.Events = func(e finding.Event) {
		if p, ok := e.(PartClaimed); ok {
			from = p.From
		}
	}
	res, err = Pack(ctx, src, out, live)
	if err != nil {
		t.Fatal(err)
	}
	reused := 0
	for _, p := range res.Packages {
		if p.Reused {
			reused++
		}
	}
	// At least the two packages the dead worker saw published (a third
	// may have been on its way, and is published all the same).
	if !slices.Equal(res.Parts.Packed, []int{2}) || reused < 2 || !strings.Contains(from, "dead worker") || !strings.Contains(from, "lease passed") {
		t.Fatalf("the takeover: %+v, %d packages reused, from %q", res.Parts, reused, from)
	}
	if _, err := Merge(ctx, out, o); err != nil {
		t.Fatal(err)
	}
	whole := t.TempDir()
	if _, err := Pack(ctx, src, whole, o); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(readFile(t, filepath.Join(out, StateName)), readFile(t, filepath.Join(whole, StateName))) {
		t.Error("the state after a takeover differs from the unsharded pack's")
	}
}

// planOnly makes the plan of o's parts in out, as its first worker would.
func planOnly(t *testing.T, src, out string, o Options) *partPlan {
	t.Helper()
	if err := o.setDefaults(); err != nil {
		t.Fatal(err)
	}
	op, err := openOutput(context.Background(), out)
	if err != nil {
		t.Fatal(err)
	}
	defer op.close()
	board := &claim.Board{Store: op, Dir: claimsDir, Worker: o.Worker, Lease: o.Lease}
	pl, err := getPlan(context.Background(), board, op, src, out, &o, &PartsReport{})
	if err != nil {
		t.Fatal(err)
	}
	return pl
}

// A merge finds a part whose manifest names a file outside its range.
func TestMergeRefusesFileOutsidePart(t *testing.T) {
	t.Parallel()
	src := skewedTree(t, 30)
	out := t.TempDir()
	o := partOptions()
	workers(t, src, out, 1, 3, o)
	// The plan's cuts moved after the parts were packed.
	b := readFile(t, filepath.Join(out, partsName))
	pl, _ := readPlan(&output{Sink: mustDir(t, out)})
	pl.Bounds[0], pl.Bounds[1] = pl.Bounds[1], pl.Bounds[0]
	nb := mustJSON(t, pl)
	if bytes.Equal(b, nb) {
		t.Fatal("the plan did not change")
	}
	os.WriteFile(filepath.Join(out, partsName), nb, 0o644)
	_, err := Merge(context.Background(), out, o)
	var se *ShardError
	if !errors.As(err, &se) || !se.Part || !strings.Contains(err.Error(), "outside the part's range") {
		t.Fatalf("merge of parts outside their ranges: %v", err)
	}
}

func mustDir(t *testing.T, dir string) sink.Sink {
	s, err := sink.OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// The cuts balance the bytes: on a tree where one prefix holds 40% of
// them, every part is within a file or two of a fair share, and the
// prefix is cut into several parts.
func TestCutterBalances(t *testing.T) {
	t.Parallel()
	c := newCutter(16)
	type file struct {
		rel  string
		size int64
	}
	var files []file
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 20000 {
		f := file{fmt.Sprintf("a%02d/f%05d", i%97, i), int64(r.IntN(200 << 10))}
		if i%97 == 0 {
			f = file{fmt.Sprintf("big/f%05d", i), 6 << 20}
		}
		files = append(files, f)
	}
	slices.SortFunc(files, func(a, b file) int { return comparePaths(a.rel, b.rel) })
	var rels []string
	var sizes []int64
	for _, f := range files {
		c.add(f.rel, f.size)
		rels, sizes = append(rels, f.rel), append(sizes, f.size)
	}
	pl := &partPlan{Parts: 16, Bounds: c.bounds()}
	cost := make([]int64, 17)
	bigParts := map[int]bool{}
	for i, rel := range rels {
		for p := 1; p <= 16; p++ {
			if pl.rangeOf(p).contains(rel) {
				cost[p] += sizes[i] + fileCost
				if strings.HasPrefix(rel, "big/") {
					bigParts[p] = true
				}
			}
		}
	}
	fair := c.cost / 16
	for p := 1; p <= 16; p++ {
		if d := cost[p] - fair; d > fair/10 || d < -fair/10 {
			t.Errorf("part %d: cost %d, a fair share is %d", p, cost[p], fair)
		}
	}
	if len(bigParts) < 4 {
		t.Errorf("the prefix with 40%% of the bytes is in %d parts", len(bigParts))
	}
	if len(c.points) > c.maxPoints() {
		t.Errorf("%d points kept", len(c.points))
	}
}

// A directory the range says is outside holds no path the range
// contains, and every path the range contains is reached.
func TestPartRangePrunes(t *testing.T) {
	t.Parallel()
	paths := []string{"a", "a-b/x", "a.b", "a/b", "a/b/c", "a/b/c/d", "a/b-c", "a/ba", "b", "b/a/a", "b/a/b", "ba/z", "c"}
	slices.SortFunc(paths, func(a, b string) int { return comparePaths(a, b) })
	for _, lo := range append([]string{""}, paths...) {
		for _, hi := range append(slices.Clone(paths), "") {
			r := &partRange{lo: lo, hasLo: lo != "", hi: hi, hasHi: hi != ""}
			for _, p := range paths {
				for d := p; strings.Contains(d, "/"); {
					d = d[:strings.LastIndexByte(d, '/')]
					if r.outside(d) && r.contains(p) {
						t.Errorf("range [%q, %q): %s pruned, yet it holds %s", lo, hi, d, p)
					}
				}
			}
		}
	}
	if !(&partRange{lo: "b", hasLo: true}).outside("a") || (&partRange{lo: "a/b", hasLo: true}).outside("a") {
		t.Error("outside")
	}
}
