package unpack

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/rsdump/rsdump/deststate"
	"github.com/rsdump/rsdump/finding"
	"github.com/rsdump/rsdump/internal/digest"
	"github.com/rsdump/rsdump/pkgread"
	"github.com/rsdump/rsdump/resourcesync"
)

// outcome is what unpacking one package came to.
type outcome struct {
	ok         bool // no problem at all: every bitstream applied or present
	header     resourcesync.Header
	lastChange time.Time
	refused    int            // bitstreams refused
	counts     finding.Counts // the package's own findings
}

// action is what one manifest entry asks of the tree.
type action struct {
	b          *pkgread.Bitstream
	target     string // slash-separated, relative to the tree
	superseded bool   // a later entry of the package has the same target
	present    bool   // the target already holds the bitstream
	exists     bool   // the target is a file that does not hold it: is it rsdump's to replace?
	stale      bool   // present, with another mtime or mode than the entry's: is it rsdump's to touch?
	touch      bool   // stale and rsdump's: its mtime and mode are set at the commit
	sums       digest.Set
	perm       fs.FileMode // the mode the entry records, when hasPerm
	hasPerm    bool
	keep       fs.FileMode // of the file it replaces (exists): kept when the bitstream's source records none
	failed     bool        // refused, and reported
	staged     bool        // read, verified and staged, at its target's path in the stage
	length     int64       // the bytes staged
}

// pkgRun is the unpacking of one package.
type pkgRun struct {
	u           *unpacker
	ref         pkgread.PackageRef
	rep         *finding.Reporter // counts this package's findings
	pkg         *pkgread.Package
	actions     []*action // in manifest order
	byBits      map[*pkgread.Bitstream]*action
	failed      int
	old         int // changes of a package the state says is applied
	lastChange  time.Time
	recs        []deststate.Record
	m           *pkgread.Meter // progress
	claimed     claimed        // in the survey of the dump's targets
	st          *stage         // where the bitstreams are staged
	creator     *creator       // makes their staging files ahead, while stage runs
	journal     *journal       // what is staged whole, when the stage is kept (resume.go)
	known       *knownRecs     // the written log's records of the targets, when checkKnown read them
	held                       // what of a held package is let go (resume.go)
	dirs        *dirs          // the tree's directories, open
	listChange  bool           // a Change List's run (no package)
	speculative bool           // staged before the packages ahead committed; see stagePackage
	ready       bool           // staged and checked, to be applied
	untrusted   bool           // refused whole: its manifest contradicts its dump document, or it is older than the tree
	src         source         // the package, open
	recMu       sync.Mutex     // recs and failed, when resources are fetched at once
	// source opens a bitstream's bytes when they are not read from the
	// package in order: from inside it by ranges (repair, --only); nil
	// fetches an action's URI. fetches caps how many at once.
	source  func(ctx context.Context, a *action) (io.ReadCloser, error)
	fetches int
}

// unpackPackage stages every bitstream of a package, checks the package,
// then commits in manifest order. The error is for a cancelled context or
// a destination that cannot be written; problems with the package are
// findings, and make the outcome not ok.
func (u *unpacker) unpackPackage(ctx context.Context, ref pkgread.PackageRef, cl claimed) (outcome, error) {
	p, err := u.stagePackage(ctx, ref, cl, false)
	if err != nil {
		return outcome{}, err
	}
	defer p.release()
	return p.commitPackage()
}

// stagePackage opens a package, plans it and stages its bitstreams:
// everything short of changing the tree; a package that cannot be opened
// is reported, and its run has nothing to apply. A speculative run is that of
// a package staged while those before it in a pipeline stage and commit:
// neither the tree nor the state is yet the one it applies to, so it looks
// for no file already in place, and a Change Dump package decides whether
// its changes apply only when it commits. Call release when done with the
// run.
func (u *unpacker) stagePackage(ctx context.Context, ref pkgread.PackageRef, cl claimed, speculative bool) (*pkgRun, error) {
	p := &pkgRun{u: u, ref: ref, rep: finding.NewReporter(u.rep.Send), byBits: map[*pkgread.Bitstream]*action{},
		m: pkgread.NewMeter(u.opts.Events, ref), claimed: cl, speculative: speculative}
	if u.opts.DryRun && resourcesync.IsURL(ref.Loc) {
		if err := p.planRemote(ctx); err != nil {
			p.release()
			return nil, err
		}
		return p, nil
	}
	src, ok, err := u.open(ctx, ref, p.rep)
	if err != nil {
		p.m.Finish()
		return nil, err
	}
	if !ok {
		return p, nil
	}
	p.src = src
	p.m.Opened(src.size, u.opts.Events)
	u.count(func(r *Result) { r.Packages++ })
	if err := p.prepare(ctx); err != nil {
		p.release()
		return nil, err
	}
	return p, nil
}

// commitPackage applies a staged package to the tree, and says what it
// came to.
func (p *pkgRun) commitPackage() (outcome, error) {
	if p.ready {
		if p.speculative && p.isChange() && !p.changesApply() {
			p.actions, p.recs = nil, nil // skipped or refused, as changesApply reported; the staged files go with the stage
		}
		if err := p.apply(); err != nil {
			return outcome{}, err
		}
	}
	counts := p.rep.Counts()
	out := outcome{ok: counts.Problems() == 0, lastChange: p.lastChange, refused: p.failed, counts: counts}
	if p.pkg != nil {
		out.header = p.pkg.Header
	}
	return out, nil
}

// release removes what is left of the run: its staging directory, its
// open directories and its package.
func (p *pkgRun) release() {
	p.close()
	if p.src.close != nil {
		p.src.close()
	}
	p.m.Finish()
}

// prepare is stagePackage's work on the open package; ready is set when
// there is something to apply.
func (p *pkgRun) prepare(ctx context.Context) error {
	src := p.src
	if !p.checkLength(src.size) {
		return nil
	}
	ra, ph, mh := src.ra, (*pkgread.PassHasher)(nil), (*digest.Multi)(nil)
	if src.release != nil {
		ra = &releasing{ReaderAt: ra, p: p}
	}
	if !src.verified && len(p.ref.Want.Known()) > 0 {
		mh, _ = digest.NewMulti(p.ref.Want.Known()...)
		ph = pkgread.NewPassHasher(src.ra, src.size, mh)
		ra = ph
	}
	pkg, err := pkgread.OpenPackageDecoded(ra, src.size, p.ref.Loc, p.ref.Cap, p.u.opts.Limits, p.rep, p.claimed.dec)
	if dec := p.claimed.dec; dec != nil {
		os.Remove(dec.Spool) // read, or of no use: the package's manifest is not the one surveyed
	}
	if err != nil {
		return nil // reported
	}
	if err := p.planOpened(pkg); err != nil || p.u.opts.DryRun || p.untrusted {
		return err
	}
	if ph != nil {
		ph.Start()
	}
	if err := p.stage(ctx); err != nil {
		return err
	}
	if err := src.wait(); err != nil {
		// The download ended short of the package whole and checked: what
		// was staged from its verified pieces is not applied.
		if err := p.u.openFailed(ctx, p.ref, p.rep, err); err != nil {
			return err
		}
		// A kept stage stays for the next run, which resumes the download.
		p.refuseStaged("the package could not be fetched whole and checked", p.journal != nil)
		return nil
	}
	if ph != nil {
		if why := p.packageHashBad(ph, mh); why != "" {
			p.refuseStaged(why, false)
			return nil
		}
	}
	p.ready = true
	return nil
}

// planPackage plans an open package's actions against the tree; in a dry
// run it is all there is to do.
func (p *pkgRun) planPackage(pkg *pkgread.Package) error {
	p.pkg = pkg
	pkg.Manifest = nil // unpack has no use for its bytes: up to 50 MB less per package in flight
	if !p.trusted() {
		p.untrusted = true
		return nil
	}
	if err := p.wrongBase(); err != nil {
		return err
	}
	p.plan()
	if r := p.u.rebase; r != nil {
		r.hold(p.actions)
	}
	if p.u.dest.root != nil {
		p.dirs = newDirs(p.u.dest.root)
	}
	if !p.speculative {
		if err := p.checkPresent(); err != nil {
			return err
		}
	}
	if p.u.opts.DryRun {
		return p.dryRun()
	}
	return nil
}

// checkLength refuses a package whose length is not the one the dump
// document gives: it is not the package listed.
func (p *pkgRun) checkLength(size int64) bool {
	if p.ref.Length < 0 || p.ref.Length == size {
		return true
	}
	p.rep.Report(finding.Finding{Severity: finding.Error, Code: finding.CheckLength, Source: p.ref.Loc, URI: p.ref.Entry.Loc,
		Expected: itoa(p.ref.Length), Actual: itoa(size), Msg: "package length differs from " + p.ref.Doc + "; nothing unpacked"})
	return false
}

func (p *pkgRun) isChange() bool {
	if p.pkg == nil {
		return p.listChange
	}
	return p.pkg.Header.MD.Capability == resourcesync.CapChangeDumpManifest
}

// plan turns manifest entries into actions on targets. In a Change Dump
// Manifest, later entries for a target supersede earlier ones: only the
// last change of each target is applied, which ends in the same tree as
// applying them all in order. A Change Dump package that does not apply
// (changesApply) gets no actions.
func (p *pkgRun) plan() {
	if p.isChange() && !p.speculative && !p.changesApply() {
		return
	}
	last := map[string]*action{}
	for _, b := range p.pkg.Bitstreams {
		a := p.actionFor(b, last)
		if a == nil {
			continue
		}
		last[a.target] = a
		p.actions = append(p.actions, a)
		p.byBits[b] = a
	}
}

func (p *pkgRun) actionFor(b *pkgread.Bitstream, last map[string]*action) *action {
	target, err := p.u.opts.Mapper.Target(b.URL)
	if err != nil {
		p.refuse(&action{b: b}, CheckTarget, err.Error())
		return nil
	}
	a := &action{b: b, target: target}
	prev := last[target]
	switch {
	case prev != nil && !p.isChange():
		p.refuse(a, CheckTarget, fmt.Sprintf("entry %d lands on the same file as entry %d", b.N, prev.b.N))
		return nil
	case prev != nil:
		prev.superseded = true
	}
	if !b.Deleted() && b.File == nil && (b.Bad != "" || !p.pkg.ManifestOnly()) {
		p.refuse(a, CheckRefused, "not written: "+orText(b.Bad, "the package has no readable entry for it"))
	} else if !b.Deleted() {
		p.claim(a)
	}
	return a
}

// refuse marks an action failed and reports why, naming its target.
func (p *pkgRun) refuse(a *action, check, msg string) {
	a.failed = true
	p.failed++
	p.u.count(func(r *Result) { r.Refused++ })
	p.rep.Report(finding.Finding{Severity: finding.Error, Code: check, Source: p.ref.Loc, URI: a.b.URL.Loc, Path: a.target, Msg: msg})
}

// checkPresent finds the targets that already hold their bitstream: they
// are not read from the package again, which makes a re-run after an
// interruption fast. A snapshot made the tree exactly (rebase) finds them
// from the written log (checkKnown).
func (p *pkgRun) checkPresent() error {
	if p.u.rebase != nil {
		return p.checkKnown()
	}
	for _, a := range p.actions {
		if p.mayBePresent(a) {
			fi, err := p.dirs.check(a.target)
			p.checkFile(a, fi, err)
		}
	}
	return nil
}

func (p *pkgRun) mayBePresent(a *action) bool {
	return !a.superseded && !a.failed && !a.b.Deleted() && p.u.dest.root != nil
}

// checkFile decides, by reading it, whether the target a lands on, fi,
// (err its lookup's error) holds a's bitstream.
func (p *pkgRun) checkFile(a *action, fi fs.FileInfo, err error) {
	ok, sums := false, digest.Set(nil)
	if err == nil {
		ok, sums, err = p.u.dest.matches(a.target, fi, a.b.Length, a.b.Want)
	}
	switch {
	case isObstacle(err) && p.isChange():
		// The package's own deletions may clear the way: whether the
		// bitstream lands is decided when it commits, after them.
	case isObstacle(err) && p.u.opts.DryRun && p.u.rebase.clears(p.u.dest.root, a.target):
		// The snapshot's removals, which a dry run only reports, clear it.
	case err != nil:
		p.refuse(a, CheckTarget, "not written: "+err.Error())
	case ok:
		p.markPresent(a, fi, sums)
	case fi != nil:
		a.exists, a.keep = true, fi.Mode().Perm()
	}
}

// markPresent notes a target that holds its bitstream. Its mtime, when it
// is not the entry's, is set once the target is known to be rsdump's
// (ownership), as is its mode: the content is right, the rest may not be.
func (p *pkgRun) markPresent(a *action, fi fs.FileInfo, sums digest.Set) {
	a.present, a.sums, a.length = true, sums, fi.Size()
	a.perm, a.hasPerm = recordedPerm(a.b.File) // the ZIP entry is let go before commit
	lm := a.b.URL.Lastmod
	a.stale = !lm.IsZero() && !fi.ModTime().Equal(lm) || a.hasPerm && fi.Mode().Perm() != a.perm
	if p.recordsPresent() {
		p.recs = append(p.recs, deststate.Record{Path: a.target, Length: a.b.Length, Hash: sums.String(), Mtime: a.b.URL.Lastmod})
	}
	p.u.count(func(r *Result) { r.Present++ })
	p.report(a, finding.OK, CheckPresent, "already present", pkgread.Describe(a.b.Length, sums))
}

// recordsPresent says whether the run records the bitstreams it finds in
// place in the written log: those of changes, and all when the run that
// wrote them may have been killed before their record; not on every
// re-run of a Resource Dump, which would grow the log by the whole tree
// each time.
func (p *pkgRun) recordsPresent() bool { return p.isChange() || p.u.resuming || p.claimed.resumed }

func (p *pkgRun) report(a *action, sev finding.Severity, check, msg, actual string) {
	p.rep.Report(finding.Finding{Severity: sev, Code: check, Source: p.ref.Loc, URI: a.b.URL.Loc, Path: a.target,
		Expected: pkgread.Describe(a.b.Length, a.b.Want), Actual: actual, Msg: msg})
}

// stage reads every bitstream still needed, in ZIP order, into staging
// files. Superseded bitstreams are read and verified but not kept.
func (p *pkgRun) stage(ctx context.Context) error {
	if err := p.openStage(); err != nil {
		return fmt.Errorf("%s: staging: %w", p.u.dest.dir, err)
	}
	order := p.pkg.InZipOrder()
	points := releasePoints(p.pkg, order)
	if p.src.release != nil {
		p.others, p.otherOff = p.pkg.Others()
	}
	p.creator = p.startCreator(order)
	defer func() {
		p.creator.close()
		p.creator = nil
	}()
	for i, b := range order {
		if err := ctx.Err(); err != nil {
			return err
		}
		p.releaseTo(points[i])
		p.after = p.src.size
		if i+1 < len(order) {
			p.after = points[i+1]
		}
		a := p.byBits[b]
		switch {
		case a == nil || a.present || a.failed:
			p.pkg.Span(b) // for the layout check, before its bytes are let go
		case a.superseded:
			p.pkg.Read(b, nil)
		case p.restaged(a):
		default:
			if err := p.stageOne(a); err != nil {
				return err
			}
		}
	}
	p.pkg.CheckLayout()
	p.releaseTo(p.src.size)
	// Committing needs the entries' names and hashes, not the ZIP's: free
	// them for the next package in flight.
	p.pkg.Release()
	p.byBits = nil
	hook(HookStaged, 0)
	return nil
}

// startCreator starts making the staging files of the bitstreams stage
// will write, in order, ahead of it (see creator); nil when an earlier
// run's staged files are to be looked at first (restaged), which may
// remove the file at a target.
func (p *pkgRun) startCreator(order []*pkgread.Bitstream) *creator {
	if p.journal != nil && !p.journal.fresh {
		return nil
	}
	var todo []*action
	for _, b := range order {
		if a := p.byBits[b]; a != nil && !a.present && !a.failed && !a.superseded {
			todo = append(todo, a)
		}
	}
	if len(todo) < 2 {
		return nil
	}
	return newCreator(p.st, todo)
}

// createStaged makes a's staging file, or takes the one made ahead.
func (p *pkgRun) createStaged(a *action) (stagedFile, error) {
	if p.creator != nil {
		return p.creator.take(a)
	}
	return p.st.create(a.target)
}

// removeStaged removes a's staging file, which will not be committed.
func (p *pkgRun) removeStaged(a *action) {
	p.st.remove(a.target)
	p.creator.removed(a.target)
}

func (p *pkgRun) stageOne(a *action) error {
	f, err := p.createStaged(a)
	if refused(err) {
		p.refuse(a, CheckRefused, "not written: "+err.Error())
		return nil
	}
	if err != nil {
		return fmt.Errorf("%s: staging %s: %w", p.u.dest.dir, a.target, err)
	}
	w, done := p.m.Bitstream(a.b)
	res := p.pkg.Read(a.b, io.MultiWriter(f, w))
	done()
	if res.WriteErr != nil || res.Severity == finding.Error {
		f.Close()
		p.removeStaged(a)
		if res.WriteErr != nil {
			return fmt.Errorf("%s: writing %s: %w", p.u.dest.dir, a.target, res.WriteErr)
		}
		p.refuse(a, CheckRefused, "not written: the bitstream failed verification; the file at this name is left as it was")
		return nil
	}
	if err := p.st.seal(f, a.b.URL.Lastmod, a.b.File, 0); err != nil {
		p.removeStaged(a)
		p.refuse(a, CheckRefused, "not written: "+err.Error())
		return nil
	}
	a.staged, a.length = true, res.Length
	p.recs = append(p.recs, deststate.Record{Path: a.target, Length: res.Length, Hash: res.Sums.String(), Mtime: a.b.URL.Lastmod})
	if err := p.journalStaged(a, res.Sums); err != nil {
		return fmt.Errorf("%s: staging: %w", p.u.dest.dir, err)
	}
	return nil
}

// refused says whether a staging error refuses one bitstream (its
// directory cannot be made: a file of the package is in the way) rather
// than stopping the run.
func refused(err error) bool {
	var de *dirError
	return errors.As(err, &de)
}

// packageHashBad finishes the package's hash and says why the package
// must not be committed, or "" when its hash matches the dump document.
func (p *pkgRun) packageHashBad(ph *pkgread.PassHasher, mh *digest.Multi) string {
	base := finding.Finding{Severity: finding.Error, Source: p.ref.Loc, URI: p.ref.Entry.Loc}
	if err := ph.Finish(); err != nil {
		base.Code, base.Msg = finding.CheckRead, err.Error()
		p.rep.Report(base)
		if errors.Is(err, pkgread.ErrChanged) {
			return "the package changed while it was read"
		}
		return "the package cannot be read to its end"
	}
	_, bad, _ := digest.Check(p.ref.Want, mh.Sums())
	for _, m := range bad {
		f := base
		f.Code, f.Expected, f.Actual, f.Msg = finding.CheckHash, m.Alg+":"+m.Want, m.Alg+":"+m.Got, "package differs from "+p.ref.Doc
		p.rep.Report(f)
	}
	if len(bad) > 0 {
		return "the package's hash differs from the dump document"
	}
	return ""
}

// refuseStaged refuses every staged bitstream, reporting each, and throws
// them away unless keep (a kept stage, for the next run to resume from).
func (p *pkgRun) refuseStaged(why string, keep bool) {
	for _, a := range p.actions {
		if a.staged {
			if !keep {
				p.st.remove(a.target)
			}
			a.staged = false
			p.refuse(a, CheckRefused, "not written: "+why)
		}
	}
}

// close releases the package's open directories and removes its staging
// directory with whatever an error left in it.
func (p *pkgRun) close() {
	if p.dirs != nil {
		p.dirs.close()
	}
	if p.st != nil {
		p.st.close(p.u.dest)
	}
	p.journal.close()
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func orText(s, alt string) string {
	if s == "" {
		return alt
	}
	return s
}
