package pack

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/rsdump/rsdump/finding"
	"github.com/rsdump/rsdump/internal/claim"
)

// Claimed parts (Options.Parts): more parts than workers, each worker
// claiming the next unclaimed part once it is done with one, as Hadoop
// DistCp's dynamic strategy hands out chunks, so that a slow or heavy
// part holds one worker, not the whole job.
//
// The parts are contiguous ranges of the walk order, cut where the
// running total of bytes (and a cost per file) passes each M-th of the
// whole: the first worker to start walks the tree's names and sizes
// (nothing is read) and writes the cut points into OUT (partsName);
// every worker takes them from there. Ranges, not a hash of each path:
//   - a part's walk skips the directories outside its range, so that M
//     parts cost about one walk of the tree, not M;
//   - a part's files are neighbours, as in an unsharded pack, and a
//     prefix holding 40% of the bytes is cut into many parts;
//   - the merge is a concatenation of the parts in order.
// Membership depends on the path and the cut points alone, whatever each
// worker sees of the tree, so the parts are disjoint and cover it.
//
// A part is packed as a shard of M (its packages, journal and completion
// line are a shard's: resourcedump-shard07of16-00001.zip), so that Merge
// reads parts and fixed shards alike.

// partsName is the plan of a claimed-parts run in OUT: the cut points.
const partsName = ".rsdump-pack.parts"

// claimsDir holds the claims of the parts (and of the plan) in OUT;
// pack.IsOutput names none of them, so serve never publishes them.
const claimsDir = ".rsdump-claims/"

// planJob is the claim of the one worker that plans the parts.
const planJob = "plan"

// partPlan is partsName's content.
type partPlan struct {
	Version int       `json:"version"`
	Parts   int       `json:"parts"`
	At      time.Time `json:"at"`      // every part's, the dump's
	Options string    `json:"options"` // mergeKey of the planner's options
	// Bounds are the M-1 cut points: part p holds the paths from
	// Bounds[p-2] (the start of the walk for part 1) up to but not
	// including Bounds[p-1] (the end for part M), in walk order.
	Bounds  []string  `json:"bounds"`
	Files   int64     `json:"files"`
	Bytes   int64     `json:"bytes"`
	Planner string    `json:"planner"`
	Planned time.Time `json:"planned"`
}

// key identifies the plan in the parts' journals, so that a merge never
// takes the parts of two plans together.
func (pl *partPlan) key() string {
	return fmt.Sprintf("parts=%d@%s", pl.Parts, pl.Planned.UTC().Format(time.RFC3339Nano))
}

// rangeOf is part p's range.
func (pl *partPlan) rangeOf(p int) *partRange {
	r := &partRange{}
	if p > 1 {
		r.lo, r.hasLo = pl.Bounds[p-2], true
	}
	if p < pl.Parts {
		r.hi, r.hasHi = pl.Bounds[p-1], true
	}
	return r
}

// partRange is a contiguous range of the walk order.
type partRange struct {
	lo, hi       string
	hasLo, hasHi bool
}

func (r *partRange) contains(rel string) bool {
	return (!r.hasLo || comparePaths(rel, r.lo) >= 0) && (!r.hasHi || comparePaths(rel, r.hi) < 0)
}

// outside says whether no path under the directory dir can be in the
// range, so that the walk need not enter it. Every path under dir sorts
// after dir+"/" and, as '/' sorts first, before any path that does not
// start with it.
func (r *partRange) outside(dir string) bool {
	d := dir + "/"
	if r.hasHi && comparePaths(d, r.hi) >= 0 {
		return true
	}
	return r.hasLo && comparePaths(d, r.lo) < 0 && !strings.HasPrefix(r.lo, d)
}

// PartClaimed is the event of a part this run claimed.
type PartClaimed struct {
	Part, Parts int
	From        string // the claim taken over (its lease passed), or ""
}

// PartsReport is what a claimed-parts run did, and what it left.
type PartsReport struct {
	Parts   int      // M
	Planned bool     // this run planned them
	Packed  []int    // the parts this run packed
	Done    int      // parts done at the end, by any worker
	Held    []string // parts other workers hold, leases running
	Left    []string // parts not done whose lease passed: a rerun takes them
}

// packParts is a worker of a claimed-parts run: it gets the plan (making
// it, if no one has), then claims and packs parts until none is left.
func packParts(ctx context.Context, src, outDir string, o Options) (*Result, error) {
	start := time.Now()
	out, err := openOutput(ctx, outDir)
	if err != nil {
		return nil, err
	}
	defer out.close()
	board := &claim.Board{Store: out, Dir: claimsDir, Worker: o.Worker, Lease: o.Lease}
	if err := claim.Probe(ctx, out, claimsDir); err != nil {
		return nil, err
	}
	rep := &PartsReport{}
	pl, err := getPlan(ctx, board, out, src, outDir, &o, rep)
	if err != nil {
		return nil, err
	}
	rep.Parts = pl.Parts
	jobs := make([]string, pl.Parts)
	for p := range jobs {
		jobs[p] = shardTag(p+1, pl.Parts)
	}
	res := &Result{Document: out.Loc(partsName), DumpURL: o.DumpURL, Parts: rep}
	wo := claim.WorkOptions{Claimed: func(h *claim.Held) {
		from := ""
		if h.From != nil {
			from = fmt.Sprintf("%s, whose lease passed at %s", h.From, h.From.Until.UTC().Format(time.RFC3339))
			if h.From.Failed != "" {
				from = fmt.Sprintf("%s, who gave it up: %s", h.From, h.From.Failed)
			}
		}
		o.Events(PartClaimed{Part: partOf(h.Record().Job), Parts: pl.Parts, From: from})
	}}
	if o.Shards > 0 {
		wo.Start = (o.Shard - 1) * pl.Parts / o.Shards
	}
	wrep, err := board.Work(ctx, jobs, wo, func(ctx context.Context, h *claim.Held) error {
		p := partOf(h.Record().Job)
		pres, err := packPart(ctx, src, outDir, o, pl, p)
		if err != nil {
			return fmt.Errorf("part %d of %d: %w", p, pl.Parts, err)
		}
		res.add(pres)
		rep.Packed = append(rep.Packed, p)
		return nil
	})
	if wrep != nil {
		rep.Done = wrep.Done
		rep.Held, rep.Left = wrep.Describe(func(job string) string { return fmt.Sprintf("part %d", partOf(job)) })
	}
	slices.Sort(rep.Packed)
	res.Elapsed = time.Since(start)
	return res, err
}

// partOf is the part a job names: "shard07of16" is 7.
func partOf(job string) int {
	var k, n int
	fmt.Sscanf(job, "shard%dof%d", &k, &n)
	return k
}

// add counts a part's packages into a worker's result.
func (r *Result) add(p *Result) {
	r.Packages = append(r.Packages, p.Packages...)
	r.Bitstreams += p.Bitstreams
	r.Bytes += p.Bytes
	r.Skipped += p.Skipped
}

// packPart packs part p of the plan as shard p of M: its files only, its
// walk kept to its range. A part whose journal already ends with its
// completion line (its packer died before it marked it done) is done.
func packPart(ctx context.Context, src, outDir string, o Options, pl *partPlan, p int) (*Result, error) {
	o.Shard, o.Shards, o.Parts = p, pl.Parts, 0
	o.At, o.part, o.partKey = pl.At, pl.rangeOf(p), pl.key()
	if done, err := partDone(ctx, outDir, &o); done || err != nil {
		return &Result{}, err
	}
	return Pack(ctx, src, outDir, o)
}

// partDone says whether part o.Shard's journal ends with its completion
// line, written with these options.
func partDone(ctx context.Context, outDir string, o *Options) (bool, error) {
	if err := o.setDefaults(); err != nil {
		return false, err
	}
	out, err := openOutput(ctx, outDir)
	if err != nil {
		return false, err
	}
	defer out.close()
	j, ok, err := openJournal(out, shardJournalName(o.Shard, o.Shards))
	return ok && j.done != nil && j.done.Options == mergeKey(o) && j.head.At.Equal(o.At), err
}

// getPlan reads the plan in OUT, or makes it when no one has: the worker
// that claims the plan job walks the tree; the others wait for its plan,
// and take the job over if its lease passes first.
func getPlan(ctx context.Context, board *claim.Board, out *output, src, outDir string, o *Options, rep *PartsReport) (*partPlan, error) {
	pl, err := claim.Once(ctx, board, planJob, func() (*partPlan, error) { return readPlan(out) },
		func(pl *partPlan) error { return checkPlan(out, pl, o, nil) },
		func(ctx context.Context, h *claim.Held) (*partPlan, error) {
			rep.Planned = true
			return makePlan(ctx, h, out, src, outDir, o)
		})
	if errors.Is(err, claim.ErrGone) {
		// Planned, and the plan removed since: a merge ended the run.
		return nil, fmt.Errorf("%s: the parts were planned, and the plan is gone (a merge removed it?): remove %s to pack again", out.Loc(partsName), out.Loc(claimsDir))
	}
	return pl, err
}

// checkPlan refuses a plan made with other options than this worker's.
func checkPlan(out *output, pl *partPlan, o *Options, err error) error {
	switch {
	case err != nil:
		return err
	case pl.Options != mergeKey(o):
		return fmt.Errorf("%s: the parts were planned with other options than this worker's: give every worker the same flags, or remove it to plan again", out.Loc(partsName))
	case o.Parts != pl.Parts:
		return fmt.Errorf("%s: planned in %s, not %d: give every worker the same --parts, or remove it to plan again", out.Loc(partsName), finding.Plural(pl.Parts, "part"), o.Parts)
	case !o.At.IsZero() && !o.At.Equal(pl.At):
		return fmt.Errorf("%s: planned at %s, not at %s: give every worker the same --at", out.Loc(partsName), pl.At.UTC().Format(time.RFC3339Nano), o.At.UTC().Format(time.RFC3339Nano))
	}
	return nil
}

func readPlan(out *output) (*partPlan, error) {
	b, err := out.readSmall(partsName, 64<<20)
	if err != nil || b == nil {
		return nil, err
	}
	var pl partPlan
	if err := json.Unmarshal(b, &pl); err != nil || pl.Version != 1 || pl.Parts < 1 || len(pl.Bounds) != pl.Parts-1 {
		return nil, fmt.Errorf("%s: not a plan of parts rsdump wrote (%v)", out.Loc(partsName), err)
	}
	return &pl, nil
}

// makePlan walks the tree's names and sizes and writes the plan, under
// the plan job's claim (claim.Once keeps it while the walk runs).
func makePlan(ctx context.Context, h *claim.Held, out *output, src, outDir string, o *Options) (*partPlan, error) {
	at := o.At
	if at.IsZero() {
		at = time.Now().UTC().Truncate(time.Millisecond)
	}
	o.Events(finding.Note{Msg: fmt.Sprintf("planning %s: walking %s for the files' sizes (nothing is read)", finding.Plural(o.Parts, "part"), src)})
	c := newCutter(o.Parts)
	w := &walker{ctx: ctx, follow: o.FollowSymlinks, warn: func(string, string) {}, noAbs: true,
		visit: func(it item) error { c.add(it.rel, it.size); return nil }}
	if out.dir != "" {
		w.exclude, _ = filepath.EvalSymlinks(outDir)
	}
	if err := w.walk(src); err != nil {
		return nil, cmp.Or(context.Cause(ctx), err)
	}
	pl := &partPlan{Version: 1, Parts: o.Parts, At: at, Options: mergeKey(o), Bounds: c.bounds(),
		Files: c.files, Bytes: c.bytes, Planner: h.Record().String(), Planned: time.Now().UTC()}
	b, err := json.MarshalIndent(pl, "", " ")
	if err != nil {
		return nil, err
	}
	err = out.WriteNew(out.ctx, partsName, append(b, '\n'))
	if errors.Is(err, fs.ErrExist) {
		// Another worker took the job over and wrote its plan first.
		pl, err = readPlan(out)
		return pl, checkPlan(out, pl, o, err)
	}
	if err != nil {
		return nil, err
	}
	o.Events(finding.Note{Msg: fmt.Sprintf("planned %s of %s, %s: %s", finding.Plural(pl.Parts, "part"), finding.Plural(pl.Files, "file"), fmtSize(pl.Bytes), out.Loc(partsName))})
	return pl, h.Done(out.ctx)
}

func fmtSize(n int64) string { return finding.Plural(n, "byte") }

// fileCost is what a file counts for in the plan beyond its bytes: the
// time it costs to open, stat and list a file, as bytes read in that
// time, so that a part of many small files is not as long as a part of
// few large ones.
const fileCost = 64 << 10

// cutter picks the cut points of M parts in one pass over the walk,
// without holding every path: it keeps a path at every granule of the
// running cost, doubling the granule (and dropping every other point)
// whenever it holds more than maxPoints; at the end the kept points are
// at most a granule, a 64th of a part, from where the cuts should be.
type cutter struct {
	parts        int
	granule      int64
	cost         int64 // running cost of the files seen
	files, bytes int64
	points       []cutPoint
}

type cutPoint struct {
	rel string
	at  int64 // the running cost before this file
}

func newCutter(parts int) *cutter { return &cutter{parts: parts, granule: fileCost} }

func (c *cutter) maxPoints() int { return 128 * c.parts }

func (c *cutter) add(rel string, size int64) {
	if n := len(c.points); n == 0 || c.cost/c.granule > c.points[n-1].at/c.granule {
		c.points = append(c.points, cutPoint{rel, c.cost})
		if len(c.points) > c.maxPoints() {
			c.coarsen()
		}
	}
	c.cost += size + fileCost
	c.files++
	c.bytes += size
}

// coarsen doubles the granule, keeping one point in each.
func (c *cutter) coarsen() {
	c.granule *= 2
	kept := c.points[:1]
	for _, p := range c.points[1:] {
		if p.at/c.granule > kept[len(kept)-1].at/c.granule {
			kept = append(kept, p)
		}
	}
	c.points = kept
}

// bounds are the M-1 cut points: for each i-th M-th of the total cost,
// the kept path nearest to it. Two cuts may fall on one path (a file
// larger than a part): the part between them is empty.
func (c *cutter) bounds() []string {
	out := make([]string, 0, c.parts-1)
	for i := 1; i < c.parts; i++ {
		target := c.cost * int64(i) / int64(c.parts)
		j, _ := slices.BinarySearchFunc(c.points, target, func(p cutPoint, t int64) int { return cmp.Compare(p.at, t) })
		switch {
		case len(c.points) == 0:
			out = append(out, "")
			continue
		case j == len(c.points):
			j--
		case j > 0 && target-c.points[j-1].at < c.points[j].at-target:
			j--
		}
		out = append(out, c.points[j].rel)
	}
	return out
}

// checkParts refuses a merge while a part of the plan is not done,
// naming each such part and its claim: unclaimed, held by a worker (its
// lease running), or left by one that stopped or gave it up.
func checkParts(ctx context.Context, out *output, pl *partPlan, o *Options) error {
	if pl.Options != mergeKey(o) {
		return &ShardError{Msg: fmt.Sprintf("the parts in %s were planned with other options than the merge's (give --merge the workers' flags)", out.Loc(partsName))}
	}
	o.partKey = pl.key()
	board := &claim.Board{Store: out, Dir: claimsDir}
	all, err := board.Look(ctx)
	if err != nil {
		return err
	}
	var notDone []string
	for p := 1; p <= pl.Parts; p++ {
		st := all[shardTag(p, pl.Parts)]
		if st != nil && st.Done {
			continue
		}
		why, err := board.NotDone(ctx, st)
		if err != nil {
			return err
		}
		notDone = append(notDone, fmt.Sprintf("part %d (%s)", p, why))
	}
	if len(notDone) == 0 {
		return nil
	}
	list := strings.Join(notDone[:min(len(notDone), 5)], "; ")
	if len(notDone) > 5 {
		list += fmt.Sprintf("; and %d more", len(notDone)-5)
	}
	return &ShardError{Shards: pl.Parts, Part: true,
		Msg: fmt.Sprintf("%s of %d not done: %s; run a worker again to pack what is unclaimed or left", finding.Plural(len(notDone), "part"), pl.Parts, list)}
}
