package unpack

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/rsdump/rsdump/deststate"
	"github.com/rsdump/rsdump/finding"
	"github.com/rsdump/rsdump/internal/extsort"
	"github.com/rsdump/rsdump/pkgread"
)

// CheckUnfinished is a tree a snapshot was applied to in part: a run
// that failed part way, or was killed, left it half-applied.
const CheckUnfinished = "unfinished"

// rebase is a snapshot applied to make the tree exactly it, over what the
// tree held: an earlier snapshot and changes, or a part of it an earlier
// run applied (a re-base, Options.Rebase), or a later state (a rollback,
// Options.Rollback). Its targets are sorted on disk; the files rsdump
// owns that it does not hold are removed, found by merging the sort with
// the written log's (deststate Owned), so that memory stays bounded.
type rebase struct {
	back     bool      // older than the tree: a rollback
	from, to time.Time // what the tree was up to; the snapshot's at
	doc      string
	mu       sync.Mutex
	targets  *extsort.Sorter[string]
	err      error
	// ahead says every target is held before the first write (a list's
	// survey, or a dump's manifests all read first): the files the
	// snapshot does not hold are then removed first, so that a directory
	// can become a file, and a file a directory, in one run. Otherwise
	// they are removed once every package applied.
	ahead   bool
	removed bool // they were
	// conflicts are the problems the removals reported: files changed
	// since rsdump wrote them, kept. They do not leave the snapshot
	// unfinished; the tree holds it, and the user's files.
	conflicts int
	marked    bool // the state records the snapshot as Unfinished
	// gone are the files a dry run would have removed, so that it plans
	// what lands where they are as the run would (clears).
	gone map[string]bool
}

// checkSnapshot refuses a snapshot older than the tree, unless the run
// rolls back on purpose. A snapshot applied over the tree's later state
// (a rollback), or with Rebase over a tree rsdump has written in, is made
// the tree exactly: its targets are recorded (rebase).
func (u *unpacker) checkSnapshot(loc string, at time.Time) error {
	older := u.older(at)
	if older && !u.opts.Rollback {
		return &RollbackError{Dir: u.dest.dir, Snapshot: loc, At: at, Tree: u.state()}
	}
	u.endRebase()
	if older || u.opts.Rebase && !u.dest.st.Fresh() {
		u.rebase = &rebase{back: older, from: u.state().Since(), to: at, doc: loc,
			targets: extsort.New(u.scratchDir(), ".rsdump-snapshot-*.tmp", 1<<16, compareTargets, extsort.Strings)}
	}
	return nil
}

// reportUnfinished reports, as an error, a tree a run of its own (not one
// step of rsdump sync's, which reports it once for the whole run) leaves
// half-applied: a snapshot begun and not completed, by this run or an
// earlier one. No run over such a tree ends without an error.
func (u *unpacker) reportUnfinished() {
	f := u.state().Unfinished
	if f == nil || !u.dest.own || u.opts.DryRun {
		return
	}
	u.rep.Report(finding.Finding{Severity: finding.Error, Code: CheckUnfinished, Source: f.Document,
		Msg: "the destination is half-applied: " + f.Describe() + "; applying that snapshot again (or rsdump sync) finishes it"})
}

// endRebase lets go of the snapshot's sort, once the snapshot is applied
// or failed.
func (u *unpacker) endRebase() {
	if u.rebase != nil {
		u.rebase.targets.Close()
		u.rebase = nil
	}
}

// hold records the targets of a package's actions: what the snapshot
// keeps. It does nothing when every target was held up front.
func (r *rebase) hold(actions []*action) {
	if r.ahead {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, a := range actions {
		if r.err == nil && !a.b.Deleted() {
			r.err = r.targets.Add(a.target)
		}
	}
}

// add records one target, while the targets are gathered up front.
func (r *rebase) add(target string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err == nil && target != "" {
		r.err = r.targets.Add(target)
	}
}

// record is the state's record of the snapshot as unfinished: prev when
// it is already the record of this document (a run finishing what an
// earlier one began).
func (r *rebase) record(prev *deststate.Unfinished) *deststate.Unfinished {
	if prev != nil && prev.Document == r.doc {
		return prev
	}
	return &deststate.Unfinished{Document: r.doc, At: r.to, From: r.from, Rollback: r.back, Began: time.Now().UTC()}
}

// startRebase begins applying the snapshot, before anything changes: the
// state records it as unfinished (so that a run that fails part way, or
// is killed, leaves a record the next reads), and, when every target is
// known already, the files the snapshot does not hold go first.
func (u *unpacker) startRebase(ctx context.Context) error {
	r := u.rebase
	if r == nil {
		return nil
	}
	if err := u.markPending(); err != nil {
		return err
	}
	if !r.ahead {
		return nil
	}
	return u.removeUnheld(ctx)
}

// finishRebase records a snapshot applied whole: the files rsdump owns
// that it does not hold removed, if they were not before its writes, and
// a rollback recorded as such.
func (u *unpacker) finishRebase(ctx context.Context, s *deststate.State) error {
	r := u.rebase
	if !r.removed {
		if err := u.removeUnheld(ctx); err != nil {
			return err
		}
	}
	if r.back {
		s.Rollback = &deststate.Rollback{From: r.from, To: r.to, Document: r.doc, When: time.Now().UTC()}
	}
	s.Unfinished = nil
	return nil
}

// complete says whether every bitstream of the snapshot landed: no
// problem but the removals' conflicts.
func (u *unpacker) complete() bool {
	n := u.rep.Counts().Problems()
	if r := u.rebase; r != nil {
		n -= r.conflicts
	}
	return n == 0
}

// removeUnheld removes every file rsdump owns that the snapshot does not
// hold. A file changed since rsdump wrote it is kept and reported.
func (u *unpacker) removeUnheld(ctx context.Context) error {
	r := u.rebase
	r.removed, r.gone = true, map[string]bool{}
	if r.err != nil {
		return r.err
	}
	held, err := r.targets.Sorted()
	if err != nil {
		return err
	}
	p := &pkgRun{u: u, ref: pkgread.PackageRef{Loc: r.doc}, rep: finding.NewReporter(u.rep.Send)}
	if u.dest.root != nil {
		p.dirs = newDirs(u.dest.root)
		defer p.dirs.close()
	}
	why := "not in the snapshot"
	if r.back {
		why = "not in the snapshot rolled back to"
	}
	cur, ok, err := held.Next()
	dirs := map[string]bool{}
	_, err2 := u.dest.st.Owned(ctx, u.scratchDir(), func(rec deststate.Record) error {
		for ; err == nil && ok && cur < rec.Path; cur, ok, err = held.Next() {
		}
		if err != nil || ok && cur == rec.Path {
			return err
		}
		if p.removeLater(rec, dirs, why) && u.opts.DryRun {
			r.gone[rec.Path] = true
		}
		return nil
	})
	if err == nil {
		err = err2
	}
	r.conflicts = p.rep.Counts().Problems()
	if err != nil {
		return err
	}
	for d := range dirs {
		if err := u.dest.syncDir(d); err != nil && !u.opts.DryRun {
			return fmt.Errorf("%s: syncing %s: %w", u.dest.dir, d, err)
		}
	}
	return u.dest.st.Append(p.recs)
}

// removeLater deletes a file of the tree's other state, when it is still
// the one rsdump wrote, and says whether it did (or in a dry run would).
func (p *pkgRun) removeLater(rec deststate.Record, dirs map[string]bool, why string) bool {
	a := &action{b: &pkgread.Bitstream{}, target: rec.Path}
	fi, err := p.u.dest.checkTarget(rec.Path)
	switch {
	case err != nil:
		p.conflict(a, "not deleted: "+err.Error())
	case fi != nil: // gone already, else
		p.removeOwned(a, fi, rec, dirs, why)
	}
	return err == nil && fi != nil && !a.failed
}

// clears says whether, in a dry run, the removals of the snapshot clear
// what is in the way of target: a file where a directory is needed, or a
// directory at its name, all of whose files would go.
func (r *rebase) clears(root *os.Root, target string) bool {
	if r == nil || !r.removed || root == nil {
		return false
	}
	for d := range ancestors(target) {
		if fi, err := root.Lstat(d); err == nil && !fi.IsDir() {
			return r.gone[d]
		}
	}
	fi, err := root.Lstat(target)
	if err != nil || !fi.IsDir() {
		return false
	}
	clean := true
	fs.WalkDir(root.FS(), target, func(name string, e fs.DirEntry, err error) error {
		if err != nil || !e.IsDir() && !r.gone[name] {
			clean = false
			return fs.SkipAll
		}
		return nil
	})
	return clean
}

func compareTargets(a, b *string) int { return strings.Compare(*a, *b) }

// holdAll records the targets of every package of a dump before any is
// applied: those of the manifests the survey read (claimEntry), and the
// others' from their manifests now (planManifest, quietly: the run
// reports their problems when it applies them). When one cannot be read,
// the snapshot's files are removed only once every package applied.
func (u *unpacker) holdAll(ctx context.Context, refs []pkgread.PackageRef, surveyed []bool) error {
	r := u.rebase
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(u.opts.Jobs)
	var mu sync.Mutex
	whole := true
	for i, ref := range refs {
		if surveyed[i] {
			continue
		}
		g.Go(func() error {
			pkg, err := u.planManifest(gctx, ref, finding.NewReporter(nil))
			if gctx.Err() != nil {
				return gctx.Err()
			}
			if err != nil || pkg == nil {
				mu.Lock()
				whole = false
				mu.Unlock()
				return nil
			}
			for _, b := range pkg.Bitstreams {
				if t, err := u.opts.Mapper.Target(b.URL); err == nil && !b.Deleted() {
					r.add(t)
				}
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	r.ahead = whole
	return nil
}

// rebaseDump applies the packages of a Resource Dump that re-bases the
// tree (or rolls it back), in parallel: every target is held first, the
// state records the snapshot as unfinished, the files it does not hold
// go, and each package is applied by rebasePackage. The state records the
// dump's at, and the snapshot as finished, once every package applied
// without a problem.
func (u *unpacker) rebaseDump(ctx context.Context, d *pkgread.Dump, claims []claimed, surveyed []bool) error {
	defer u.endRebase()
	if err := u.holdAll(ctx, d.Packages, surveyed); err != nil {
		return err
	}
	if err := u.startRebase(ctx); err != nil {
		return err
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(u.opts.Jobs)
	var failed sync.Map
	for i, ref := range d.Packages {
		g.Go(func() error {
			out, err := u.rebasePackage(gctx, ref, claims[i])
			if err == nil && !out.ok {
				failed.Store(ref.Loc, true)
			}
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	s := u.state()
	s.Pending = false
	if !anyStored(&failed) && u.complete() {
		if err := u.finishRebase(ctx, &s); err != nil {
			return err
		}
		s.ResourceDumpAt, s.ChangeDumpUntil, s.Source = d.Header.MD.At, time.Time{}, d.Source
	}
	return u.finishState(s)
}

// rebasePackage applies one package of a snapshot over the tree, planned
// from its manifest alone (planManifest: the detached copy, or the
// central directory and manifest entry read by ranges) against the
// written log (checkKnown). Nothing of the package is fetched when every
// bitstream is in place; it is fetched whole, through the streaming path,
// when most of its bytes differ (fetchWhole); otherwise only the
// bitstreams that differ are read from inside it by byte ranges, as a
// repair reads them.
func (u *unpacker) rebasePackage(ctx context.Context, ref pkgread.PackageRef, cl claimed) (outcome, error) {
	p := &pkgRun{u: u, ref: ref, rep: finding.NewReporter(u.rep.Send), byBits: map[*pkgread.Bitstream]*action{},
		m: pkgread.NewMeter(nil, ref), claimed: cl}
	defer p.release()
	pkg, err := u.planSurveyed(ctx, ref, cl, p.rep)
	if err != nil {
		return p.outcome(), u.openFailed(ctx, ref, p.rep, err)
	}
	if pkg == nil {
		return p.outcome(), nil // reported
	}
	u.count(func(r *Result) { r.Packages++ })
	if err := p.planPackage(pkg); err != nil {
		return outcome{}, err
	}
	if p.untrusted || u.opts.DryRun {
		return p.outcome(), nil
	}
	need, n := p.fetchBytes()
	var ferr error
	switch {
	case n == 0:
		ferr = p.apply()
	case fetchWhole(ref, need, n):
		ferr = p.fetchPackage(ctx)
	default:
		ferr = p.fetchRanges(ctx)
	}
	if ferr != nil {
		return outcome{}, ferr
	}
	return p.outcome(), nil
}

// planSurveyed reads a package's manifest as planManifest does, from the
// copy of its detached manifest the survey kept when there is one.
func (u *unpacker) planSurveyed(ctx context.Context, ref pkgread.PackageRef, cl claimed, rep *finding.Reporter) (*pkgread.Package, error) {
	if cl.detached != "" {
		if f, err := os.Open(cl.detached); err == nil {
			defer f.Close()
			return rejected(pkgread.ReadManifest(f, ref.Loc, ref.Cap, u.opts.Limits, rep))
		}
	}
	return u.planManifest(ctx, ref, rep)
}

// outcome says what the run of a package came to.
func (p *pkgRun) outcome() outcome {
	counts := p.rep.Counts()
	out := outcome{ok: counts.Problems() == 0, lastChange: p.lastChange, refused: p.failed, counts: counts}
	if p.pkg != nil {
		out.header = p.pkg.Header
	}
	return out
}

// fetchBytes is what is left to fetch of a planned package: the
// bitstreams not in place, and their bytes.
func (p *pkgRun) fetchBytes() (bytes int64, n int) {
	for _, a := range p.actions {
		if p.needsFetch(a) {
			bytes += max(a.b.Length, 0)
			n++
		}
	}
	return bytes, n
}

// rangeCost is what one bitstream read by byte ranges costs beyond its
// bytes, counted in bytes: its requests (the entry's record, its local
// header and data), each a round trip, and at 20 ms and 25 Mbit/s a round
// trip is worth some 64 KiB.
const rangeCost = 64 << 10

// fetchWhole says whether a package of which n bitstreams, need bytes,
// are to be fetched is better fetched whole than by ranges. Fetched whole
// it costs all its bytes, but comes from every mirror at once, piece by
// piece checked, and its own hash is checked too; by ranges, one
// bitstream after another, each paying rangeCost. Once what the ranges
// take, so counted, reaches half the package, they save too little to
// give that up: most of the package differs. A package of unknown length
// is read by ranges, which learn it.
func fetchWhole(ref pkgread.PackageRef, need int64, n int) bool {
	size := pkgread.PlannedSize(ref)
	return size > 0 && need+int64(n)*rangeCost >= size/2
}

// fetchRanges stages the bitstreams not in place from inside the package
// by ranges (openEntries), one at a time, then applies the package.
func (p *pkgRun) fetchRanges(ctx context.Context) error {
	g := &pickGroup{ref: p.ref, pkg: p.pkg}
	for _, a := range p.actions {
		if p.needsFetch(a) {
			g.picks = append(g.picks, a.b)
		}
	}
	src, done, err := p.u.openEntries(ctx, g)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		for _, a := range p.actions {
			if p.needsFetch(a) {
				p.refuse(a, CheckRefused, "not written: "+finding.MsgFor(err, p.ref.Loc))
			}
		}
		return p.apply() // what is in place is still recorded and touched
	}
	p.source, p.fetches = src, 1 // one package's ranges come one at a time
	var fetched atomic.Int64
	err = p.fetchAll(ctx)
	done(&fetched)
	if err != nil {
		return err
	}
	return p.apply()
}

// fetchPackage fetches the package whole through the streaming path
// (open, prepare) and applies it: the actions planned from the manifest
// are kept, bound to the entries of the package's own manifest
// (planOpened), so that what is in place is neither read nor reported
// again.
func (p *pkgRun) fetchPackage(ctx context.Context) error {
	u := p.u
	finding.Send(u.opts.Events, finding.Planned{Bytes: max(pkgread.PlannedSize(p.ref), 0)})
	p.m = pkgread.NewMeter(u.opts.Events, p.ref)
	src, ok, err := u.open(ctx, p.ref, p.rep)
	if err != nil || !ok {
		return err
	}
	p.src = src
	p.m.Opened(src.size, u.opts.Events)
	if err := p.prepare(ctx); err != nil {
		return err
	}
	if !p.ready {
		return nil
	}
	return p.apply()
}
