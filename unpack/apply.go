package unpack

import (
	"errors"
	"fmt"
	"io/fs"
	"iter"
	"path"
	"sort"
	"strings"

	"github.com/rsdump/rsdump/deststate"
	"github.com/rsdump/rsdump/finding"
	"github.com/rsdump/rsdump/internal/digest"
	"github.com/rsdump/rsdump/pkgread"
)

// apply commits the staged bitstreams and carries out the deletions,
// then makes it durable: the parent directories, the written log. With
// AtomicPackage, nothing is committed when the package has any problem: a
// bitstream refused or unverified, an orphan, an unsafe name.
func (p *pkgRun) apply() error {
	if n := p.rep.Counts().Problems(); p.u.opts.AtomicPackage && n > 0 {
		p.refuseStaged("--atomic-package, and the package has "+finding.Plural(n, "problem"), false)
		return nil
	}
	p.findExisting()
	recs, err := p.ownership()
	if err != nil {
		return err
	}
	if err := p.durable(); err != nil {
		return err
	}
	hook(HookDurable, 0)
	dirs, renamed, err := p.commit(recs)
	if err != nil {
		return err
	}
	hook(HookCommitted, 0)
	return p.makeDurable(dirs, renamed)
}

// commit carries out the deletions, then gives the staged bitstreams
// their names, both in manifest order; only the last change of a target
// is left, so the order between the two does not change the tree, and
// deletions first let a file take the place of a directory the package
// empties. It holds the tree's commit lock: packages staged at once
// commit one at a time, so that a directory missing from the tree is
// moved there by one package only. It returns the directories to sync
// (where there is no syncfs) and the renames done. The state is marked
// pending first (markPending): the tree changes from here on.
func (p *pkgRun) commit(recs map[string]deststate.Record) (map[string]bool, int, error) {
	p.u.commitMu.Lock()
	defer p.u.commitMu.Unlock()
	if p.changes() {
		if err := p.u.markPending(); err != nil {
			return nil, 0, err
		}
	}
	for _, a := range p.actions {
		if a.touch {
			p.touch(a)
		}
	}
	p.dirs.close() // what was found of the tree before staging may be out of date
	dirs := map[string]bool{}
	for _, a := range p.actions {
		if a.b.Deleted() && !a.superseded && !a.failed {
			if err := p.delete(a, recs, dirs); err != nil {
				return nil, 0, err
			}
		}
	}
	l := &lander{p: p, moved: map[string]bool{}, dirs: dirs}
	for _, a := range p.actions {
		if a.staged {
			p.commitOne(a, l)
		}
	}
	return dirs, l.renames, nil
}

// changes says whether the commit will change the tree or what rsdump
// records of it, deletions aside: a bitstream staged, a file adopted (its
// record to append) or touched. A deletion marks the run itself, just
// before it removes a file (removeOwned): one refused, or of a file
// already gone, changes nothing. A package whose every change was refused
// leaves the tree, and its state, as they were.
func (p *pkgRun) changes() bool {
	if len(p.recs) > 0 {
		return true
	}
	for _, a := range p.actions {
		if a.staged || a.touch {
			return true
		}
	}
	return false
}

// durable makes the staged files durable, when there are any.
func (p *pkgRun) durable() error {
	for _, a := range p.actions {
		if a.staged {
			if err := p.st.durable(); err != nil {
				return fmt.Errorf("%s: syncing staged files: %w", p.u.dest.dir, err)
			}
			return nil
		}
	}
	return nil
}

// commitOne gives a staged bitstream its name, or refuses it.
func (p *pkgRun) commitOne(a *action, l *lander) {
	if err := l.land(a.target); err != nil {
		p.st.remove(a.target)
		a.staged = false
		p.refuse(a, CheckRefused, "not written: "+err.Error())
		return
	}
	a.staged = false
	p.u.count(func(r *Result) { r.Written++; r.Bytes += a.length }) // only bytes that landed count
	p.report(a, finding.OK, CheckWritten, "", pkgread.Describe(a.b.Length, a.b.Want))
}

// lander moves a package's staged bitstreams into the tree.
type lander struct {
	p       *pkgRun
	moved   map[string]bool // staged directories moved into the tree whole
	dirs    map[string]bool // to sync, where there is no syncfs
	renames int
}

// land gives the staged bitstream rel its name. Where a directory on its
// path is missing from the tree, the staged directory is renamed there
// whole, with every bitstream staged in it (they are all verified and
// durable by now): a fresh restore renames directories, not files.
func (l *lander) land(rel string) error {
	parent := "."
	for d := range ancestors(rel) {
		if l.moved[d] {
			return nil // landed with its directory
		}
		h, err := l.p.dirs.lookup(d)
		if err != nil {
			return fmt.Errorf("%s: %w", rel, err)
		}
		if h == nil {
			if err := l.rename(d, parent, false); err != nil {
				return err
			}
			l.moved[d] = true
			return nil
		}
		parent = d
	}
	return l.rename(rel, parent, true)
}

// rename moves the staged file or directory name into the tree's
// directory parent, which exists. A file is not renamed over a symbolic
// link or a directory.
func (l *lander) rename(name, parent string, file bool) error {
	h, err := l.p.dirs.lookup(parent)
	if err == nil && h == nil {
		err = fmt.Errorf("%s: %s is gone", name, parent)
	}
	if err == nil && file {
		_, err = targetInfo(name, lstat(h, path.Base(name)))
	}
	if err != nil {
		return err
	}
	hook(HookCommit, l.renames)
	if err := l.p.st.land(name, h, path.Base(name)); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	l.renames++
	if !syncfsWorks {
		l.dirs[parent] = true
		for _, d := range l.p.st.madeUnder(name) {
			l.dirs[d] = true
		}
	}
	return nil
}

// ancestors yields the directories on rel's path from the top: "a" and
// "a/b" for "a/b/c".
func ancestors(rel string) iter.Seq[string] {
	return func(yield func(string) bool) {
		for i := 0; i < len(rel); i++ {
			if rel[i] == '/' && !yield(rel[:i]) {
				return
			}
		}
	}
}

// makeDurable makes the new names durable, then appends the records of
// what was written to the log. The renames are made durable by one
// syncfs(2) of the file system they are all on (the staging directory's:
// a rename cannot leave it), or elsewhere by syncing each directory that
// got a new name; the directories of deleted files are synced each.
func (p *pkgRun) makeDurable(dirs map[string]bool, renamed int) error {
	if renamed > 0 && syncfsWorks {
		if err := syncfs(p.st.dir); err != nil {
			return fmt.Errorf("%s: syncing the tree: %w", p.u.dest.dir, err)
		}
	}
	names := make([]string, 0, len(dirs))
	for d := range dirs {
		names = append(names, d)
	}
	sort.Strings(names)
	for _, d := range names {
		if err := p.u.dest.syncDir(d); err != nil {
			return fmt.Errorf("%s: syncing %s: %w", p.u.dest.dir, d, err)
		}
	}
	hook(HookSynced, 0)
	p.u.logMu.Lock()
	defer p.u.logMu.Unlock()
	if err := p.u.dest.st.Append(p.committedRecords()); err != nil {
		return fmt.Errorf("%s: written log: %w", p.u.dest.dir, err)
	}
	return nil
}

// committedRecords keeps the records of the targets now in the tree: the
// ones written, found present, or deleted (as tombstones). Records are
// made only for those (never for a superseded action), so with no action
// failed they all are.
func (p *pkgRun) committedRecords() []deststate.Record {
	if p.failed == 0 {
		return p.recs
	}
	ok := map[string]bool{}
	for _, a := range p.actions {
		if !a.failed && !a.superseded {
			ok[a.target] = true
		}
	}
	var out []deststate.Record
	for _, r := range p.recs {
		if ok[r.Path] {
			out = append(out, r)
		}
	}
	return out
}

// findExisting notes which staged bitstreams land on a file that is
// there, for a package staged ahead, which did not look (checkPresent
// did for the others).
func (p *pkgRun) findExisting() {
	if !p.speculative {
		return
	}
	for _, a := range p.actions {
		if a.staged {
			fi, err := p.u.dest.root.Lstat(a.target)
			a.exists = err == nil && fi.Mode().IsRegular()
			if a.exists {
				a.keep = fi.Mode().Perm()
			}
		}
	}
}

// ownership looks up in the written log, in one pass, the targets the
// package deletes, replaces or adopts, and applies the rule that rsdump
// changes only what it wrote: a file at a bitstream's name that rsdump
// did not write is left as it was and the bitstream refused, unless
// Overwrite; with Adopt, a file that already holds its bitstream is
// recorded as rsdump's. It returns the records of the targets.
func (p *pkgRun) ownership() (map[string]deststate.Record, error) {
	want := map[string]bool{}
	for _, a := range p.actions {
		if !a.superseded && !a.failed && (a.b.Deleted() || a.exists || a.present && (a.stale || p.u.opts.Adopt)) {
			want[a.target] = true
		}
	}
	if len(want) == 0 || p.u.dest.root == nil {
		return nil, nil
	}
	recs, err := p.lookup(want)
	if err != nil {
		return nil, err
	}
	for _, a := range p.actions {
		rec, owned := recs[a.target]
		owned = owned && !rec.Deleted()
		adopt := !owned && a.present && p.u.opts.Adopt
		switch {
		case a.superseded || a.failed || a.b.Deleted():
		case a.exists && !owned && !p.u.opts.Overwrite:
			p.notOwned(a)
		case adopt && !p.recordsPresent():
			p.recs = append(p.recs, deststate.Record{Path: a.target, Length: a.length, Hash: a.sums.String(), Mtime: a.b.URL.Lastmod})
		}
		if a.present && a.stale && (owned || adopt) {
			a.touch = true // at the commit, once the run is marked pending
		}
	}
	return recs, nil
}

// lookup returns the written log's records of the targets in want: those
// checkKnown read, when it read them all.
func (p *pkgRun) lookup(want map[string]bool) (map[string]deststate.Record, error) {
	if k := p.known; k != nil && allIn(want, k.looked) {
		return k.recs, nil
	}
	return p.u.dest.st.Lookup(want)
}

func allIn(want, looked map[string]bool) bool {
	for t := range want {
		if !looked[t] {
			return false
		}
	}
	return true
}

// touch gives a file rsdump owns that already holds its bitstream the
// entry's mtime and mode.
func (p *pkgRun) touch(a *action) {
	if p.u.opts.DryRun {
		return
	}
	if lm := a.b.URL.Lastmod; !lm.IsZero() {
		p.u.dest.root.Chtimes(a.target, lm, lm)
	}
	if a.hasPerm {
		p.u.dest.root.Chmod(a.target, a.perm)
	}
}

// notOwned refuses a bitstream whose name holds a file rsdump did not
// write.
func (p *pkgRun) notOwned(a *action) {
	if a.staged {
		p.st.remove(a.target)
		a.staged = false
	}
	p.conflict(a, "not written: a file rsdump did not write is at this name, and is left as it was (--overwrite replaces it)")
}

// delete removes a target for a deleted change, but only when the file is
// the one rsdump last wrote (or adopted) there. A file changed locally,
// or one rsdump has no record of, is kept and reported.
func (p *pkgRun) delete(a *action, recs map[string]deststate.Record, dirs map[string]bool) error {
	fi, err := p.u.dest.checkTarget(a.target)
	switch {
	case err != nil:
		p.conflict(a, "not deleted: "+err.Error())
		return nil
	case fi == nil:
		p.deleted(a, "already absent")
		return nil
	}
	rec, ok := recs[a.target]
	if !ok || rec.Deleted() {
		p.conflict(a, "not deleted: rsdump did not write this file (its written log has no record of it)")
		return nil
	}
	return p.removeOwned(a, fi, rec, dirs, "")
}

// removeOwned removes a's target, the file fi, when it is still the
// version rsdump's record rec describes; why says why, in the finding.
func (p *pkgRun) removeOwned(a *action, fi fs.FileInfo, rec deststate.Record, dirs map[string]bool, why string) error {
	want, _ := digest.Parse(rec.Hash)
	if len(want.Known()) == 0 {
		p.conflict(a, "not deleted: rsdump's record of this file gives no hash to compare it with")
		return nil
	}
	same, err := p.sameFile(a.target, fi.Size(), rec.Length, want)
	switch {
	case err != nil:
		p.conflict(a, "not deleted: "+err.Error())
	case !same:
		p.conflict(a, "not deleted: the file differs from the version rsdump wrote (changed at the Destination?)")
	case p.u.opts.DryRun:
		p.deleted(a, strings.TrimPrefix(why+"; would delete (dry run)", "; "))
	default:
		// The tree changes from here on (a removal of a snapshot's
		// is the run's first change when it comes before any commit).
		if err := p.u.markPending(); err != nil {
			return err
		}
		p.remove(a, dirs, why)
	}
	return nil
}

func (p *pkgRun) sameFile(rel string, size, length int64, want digest.Set) (bool, error) {
	if length >= 0 && size != length {
		return false, nil
	}
	sums, err := p.u.dest.hash(rel, want.Known())
	if err != nil {
		return false, err
	}
	_, bad, _ := digest.Check(want, sums)
	return len(bad) == 0, nil
}

func (p *pkgRun) remove(a *action, dirs map[string]bool, why string) {
	if err := p.u.dest.root.Remove(a.target); err != nil && !errors.Is(err, fs.ErrNotExist) {
		p.conflict(a, "not deleted: "+err.Error())
		return
	}
	dirs[path.Dir(a.target)] = true
	p.pruneDirs(a.target, dirs)
	p.recs = append(p.recs, deststate.Record{Path: a.target, Length: -1})
	p.deleted(a, why)
}

func (p *pkgRun) deleted(a *action, msg string) {
	p.u.count(func(r *Result) { r.Deleted++ })
	p.rep.Report(finding.Finding{Severity: finding.OK, Code: CheckDeleted, Source: p.ref.Loc, URI: a.b.URL.Loc, Path: a.target, Msg: msg})
}

func (p *pkgRun) conflict(a *action, msg string) {
	a.failed = true
	p.failed++
	p.u.count(func(r *Result) { r.Refused++ })
	p.rep.Report(finding.Finding{Severity: finding.Error, Code: CheckConflict, Source: p.ref.Loc, URI: a.b.URL.Loc, Path: a.target, Msg: msg})
}

// dryRun reports what a run would change, from the manifest and the tree
// alone: bitstreams are not read, so a damaged one shows up only in a
// real run (or in rsdump verify).
func (p *pkgRun) dryRun() error {
	recs, err := p.ownership()
	if err != nil {
		return err
	}
	for _, a := range p.actions {
		switch {
		case a.superseded || a.failed || a.present:
		case a.b.Deleted():
			p.delete(a, recs, map[string]bool{})
		default:
			p.u.count(func(r *Result) { r.Written++; r.Bytes += max(a.b.Length, 0) })
			p.report(a, finding.OK, CheckWritten, "would write (dry run)", "")
		}
	}
	return nil
}
