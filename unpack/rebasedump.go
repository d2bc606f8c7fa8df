package unpack

import (
	"context"
	"io/fs"
	"os"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/rsdump/rsdump/deststate"
	"github.com/rsdump/rsdump/finding"
	"github.com/rsdump/rsdump/pkgread"
)

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
	allOK, err := u.applyAll(ctx, d, claims, u.rebasePackage)
	if err != nil {
		return err
	}
	s := u.state()
	s.Pending = false
	if allOK && u.complete() {
		if err := u.finishRebase(ctx, &s); err != nil {
			return err
		}
		s.ResourceDumpAt, s.ChangeDumpUntil, s.Source = d.Header.MD.At, time.Time{}, d.Source
		return u.saveState(s)
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
	err = p.fetchAll(ctx)
	done()
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

// CheckDetached is a package whose own manifest is not the detached copy
// its dump document links, which the run planned from.
const CheckDetached = "detached"

// planOpened plans a package just opened; or, when its actions were
// planned from its manifest before it was fetched (rebasePackage), binds
// them to the entries the package's own manifest gives, which must be
// those of the copy they were planned from, entry for entry: otherwise
// nothing of the package is applied.
func (p *pkgRun) planOpened(pkg *pkgread.Package) error {
	if p.pkg == nil {
		return p.planPackage(pkg)
	}
	planned := p.pkg
	p.pkg = pkg
	pkg.Manifest = nil
	if !sameEntries(planned.Bitstreams, pkg.Bitstreams) {
		p.untrusted = true
		p.rep.Report(finding.Finding{Severity: finding.Error, Code: CheckDetached, Source: p.ref.Loc, URI: p.ref.Contents,
			Msg: "package refused: its manifest is not the detached copy " + orText(p.ref.Contents, "read before it") + " gives"})
		return nil
	}
	index := make(map[*pkgread.Bitstream]int, len(planned.Bitstreams))
	for i, b := range planned.Bitstreams {
		index[b] = i
	}
	clear(p.byBits)
	for _, a := range p.actions {
		a.b = pkg.Bitstreams[index[a.b]]
		p.byBits[a.b] = a
		if !a.failed && !a.present && !a.b.Deleted() && a.b.File == nil {
			p.refuse(a, CheckRefused, "not written: "+orText(a.b.Bad, "the package has no readable entry for it"))
		}
	}
	return nil
}

// sameEntries says whether two manifests list the same bitstreams.
func sameEntries(a, b []*pkgread.Bitstream) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if x.URL.Loc != y.URL.Loc || x.Path != y.Path || x.Length != y.Length || x.Want.String() != y.Want.String() || x.Deleted() != y.Deleted() {
			return false
		}
	}
	return true
}

// checkKnown finds the targets that already hold their bitstream from the
// written log, with no byte read: a target whose last record is the
// entry's version, and whose file still has the length and mtime rsdump
// gave it, holds it; one whose record is another version, its file as
// rsdump left it, does not, and is fetched. The others (no record, a
// file changed since rsdump wrote it, a record of an older rsdump with
// no mtime) are read and hashed, as checkPresent does. The records are
// kept for ownership, which then need not read the log again.
func (p *pkgRun) checkKnown() error {
	want := map[string]bool{}
	for _, a := range p.actions {
		if p.mayBePresent(a) {
			want[a.target] = true
		}
	}
	recs, err := p.u.dest.st.Lookup(want)
	if err != nil {
		return err
	}
	p.known = &knownRecs{looked: want, recs: recs}
	for _, a := range p.actions {
		if !p.mayBePresent(a) {
			continue
		}
		fi, err := p.dirs.check(a.target)
		rec, ok := recs[a.target]
		switch {
		case err != nil || fi == nil || !ok || !asWritten(rec, fi):
			p.checkFile(a, fi, err)
		case sameVersion(rec, a.b):
			p.markPresent(a, fi, mustParse(rec.Hash))
			if a.stale && !p.recordsPresent() {
				// Its mtime is set to the entry's (ownership): the record
				// follows, so that the next run need not read it.
				p.recs = append(p.recs, deststate.Record{Path: a.target, Length: rec.Length, Hash: rec.Hash, Mtime: a.b.URL.Lastmod})
			}
		default:
			a.exists = true
		}
	}
	return nil
}

// knownRecs are the written log's records of a package's targets, looked
// up once.
type knownRecs struct {
	looked map[string]bool
	recs   map[string]deststate.Record
}

// asWritten says whether the file fi is as rsdump left it when it wrote
// rec: the same length and mtime (whole seconds: some file systems keep
// no more). A record without an mtime cannot say.
func asWritten(rec deststate.Record, fi fs.FileInfo) bool {
	return !rec.Deleted() && !rec.Mtime.IsZero() && fi.Size() == rec.Length && fi.ModTime().Unix() == rec.Mtime.Unix()
}
