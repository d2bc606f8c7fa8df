package unpack

import (
	"fmt"
	"path"
	"strings"
	"time"

	"github.com/rsdump/rsdump/finding"
	"github.com/rsdump/rsdump/pkgread"
	"github.com/rsdump/rsdump/resourcesync"
)

// CheckGap is a finding about the chain of changes: a Change Dump package
// that does not start where the tree's state, or the package before it,
// ends (OSLC TRS: there must be no gap between the base and the change
// log), or a tree with no baseline at all.
const CheckGap = "gap"

// The rules the chain of changes follows (ResourceSync §13, and the OSLC
// Tracked Resource Set's base plus change log):
//
//   - A package applies after the last change the state records: its from
//     must be at or before the state's until (or the Resource Dump's at).
//     A later from is a gap, an error naming both times, unless AllowGap.
//   - A tree with no state (no Resource Dump nor Change Dump applied) has
//     no baseline: a Change Dump is an error there unless AllowGap, since
//     its updates and deletions presume files it cannot know are there.
//   - Within a Change Dump, each package starts where the one before it
//     ends. A package that starts earlier is out of order or overlaps
//     the one before, and nothing of the Change Dump is applied; one that
//     starts later leaves a gap, as above.
//   - A package whose until is at or before the state's is skipped: its
//     changes are applied. One that straddles the state's time is applied
//     whole. Replaying its earlier changes, in order, each superseded by
//     the later ones, ends in the same tree; lastmod, which sources set
//     from file times (a renamed file keeps its old mtime), is not
//     trusted to tell which of them were applied.

// refWindow is the interval the dump document gives for a package.
func refWindow(ref pkgread.PackageRef) (from, until time.Time) {
	if ref.Entry.MD == nil {
		return time.Time{}, time.Time{}
	}
	return ref.Entry.MD.From, ref.Entry.MD.Until
}

// pkgName is the last segment of a package's URI, to name it in messages.
func pkgName(ref pkgread.PackageRef) string {
	loc := ref.Entry.Loc
	if loc == "" {
		loc = ref.Loc
	}
	return path.Base(strings.ReplaceAll(loc, "\\", "/"))
}

func ftime(t time.Time) string { return resourcesync.FormatTime(t) }

// checkChain checks that the packages of a Change Dump follow one
// another, as far as the document gives their intervals. It reports
// every break and says whether the packages may be applied.
func (u *unpacker) checkChain(d *pkgread.Dump) bool {
	ok := true
	for i, ref := range d.Packages {
		from, until := refWindow(ref)
		if !from.IsZero() && !until.IsZero() && until.Before(from) {
			ok = u.chainError(ref, fmt.Sprintf("package %s ends (until %s) before it starts (from %s)", pkgName(ref), ftime(until), ftime(from)))
		}
		if i == 0 {
			continue
		}
		prev := d.Packages[i-1]
		pfrom, puntil := refWindow(prev)
		switch {
		case from.IsZero() || puntil.IsZero():
		case !until.IsZero() && !until.After(puntil) || !pfrom.IsZero() && from.Before(pfrom):
			ok = u.chainError(ref, fmt.Sprintf("packages out of order: %s (from %s until %s) is listed after %s (from %s until %s)",
				pkgName(ref), ftime(from), ftime(until), pkgName(prev), ftime(pfrom), ftime(puntil)))
		case from.Before(puntil):
			ok = u.chainError(ref, fmt.Sprintf("packages overlap: %s starts at %s, before %s ends at %s",
				pkgName(ref), ftime(from), pkgName(prev), ftime(puntil)))
		case from.After(puntil):
			ok = u.gap(u.rep, ref, fmt.Sprintf("gap in the Change Dump: %s ends at %s but the next package, %s, starts at %s",
				pkgName(prev), ftime(puntil), pkgName(ref), ftime(from)), from) && ok
		}
	}
	return ok
}

func (u *unpacker) chainError(ref pkgread.PackageRef, msg string) bool {
	u.rep.Report(finding.Finding{Severity: finding.Error, Code: finding.CheckOrder, Source: ref.Doc, URI: ref.Entry.Loc,
		Msg: msg + "; nothing of the Change Dump is applied"})
	return false
}

// continues says whether a package that starts at from (zero when not
// known) may be applied to the tree as its state stands, reporting the
// gap when not.
func (u *unpacker) continues(rep *finding.Reporter, ref pkgread.PackageRef, from time.Time) bool {
	since := u.state().Since()
	switch {
	case since.IsZero():
		return u.gap(rep, ref, fmt.Sprintf("%s has no baseline: no Resource Dump or Change Dump was applied to it, so the changes of %s%s cannot be known to apply; unpack the Resource Dump first",
			u.dest.dir, pkgName(ref), fromText(from)), from)
	case from.IsZero() || !from.After(since):
		return true
	}
	return u.gap(rep, ref, fmt.Sprintf("%s holds %s, but %s starts at %s; the changes in between are missing",
		u.dest.dir, u.state().Describe(), pkgName(ref), ftime(from)), from)
}

func fromText(from time.Time) string {
	if from.IsZero() {
		return ""
	}
	return " (from " + ftime(from) + ")"
}

// gap reports a gap: an error, or with AllowGap a warning that says the
// package is applied anyway.
func (u *unpacker) gap(rep *finding.Reporter, ref pkgread.PackageRef, msg string, from time.Time) bool {
	f := finding.Finding{Severity: finding.Error, Code: CheckGap, Source: ref.Loc, URI: ref.Entry.Loc, Actual: ftime(from)}
	if since := u.state().Since(); !since.IsZero() {
		f.Expected = "from at or before " + ftime(since)
	}
	if u.opts.AllowGap {
		f.Severity, f.Msg = finding.Warning, msg+"; applied anyway (--allow-gap)"
	} else {
		f.Msg = msg + " (--allow-gap applies it anyway)"
	}
	rep.Report(f)
	return u.opts.AllowGap
}

// changesApply decides, once a Change Dump package is open, whether its
// changes are to be applied: it checks the manifest's from for a gap when
// the dump document gave none, and skips a package whose changes the
// state says are applied. It sets p.lastChange.
func (p *pkgRun) changesApply() bool {
	for _, b := range p.pkg.Bitstreams {
		if when, _ := b.URL.ChangeTime(); when.After(p.lastChange) {
			p.lastChange = when
		}
	}
	md := p.pkg.Header.MD
	if from, _ := refWindow(p.ref); from.IsZero() && !p.u.continues(p.rep, p.ref, md.From) {
		return false
	}
	_, until := refWindow(p.ref)
	until = firstSet(until, md.Until, p.lastChange)
	if until.IsZero() || p.u.state().Applies(until) {
		return true
	}
	p.old = len(p.pkg.Bitstreams)
	p.rep.Report(finding.Finding{Severity: finding.OK, Code: CheckSkipped, Source: p.ref.Loc,
		Msg: fmt.Sprintf("package skipped: its %s, until %s, applied by an earlier run", finding.Plural(p.old, "change"), ftime(until))})
	return false
}

func firstSet(ts ...time.Time) time.Time {
	for _, t := range ts {
		if !t.IsZero() {
			return t
		}
	}
	return time.Time{}
}

// snapshotHeld says whether the tree already holds the state at or after
// a Resource Dump taken at `at`: applying it again would take the tree
// back, for the changes since to be applied once more.
func (u *unpacker) snapshotHeld(at time.Time) bool {
	since := u.state().Since()
	return !at.IsZero() && !since.IsZero() && !since.Before(at)
}

// pruneDirs removes the directories the deletion of rel left empty, up to
// the tree's root: a directory exists at the Destination only because a
// file is in it, as at the Source once its last file is deleted or moved.
// A directory still holding anything stops it. dirs, the directories to
// sync, follows.
func (p *pkgRun) pruneDirs(rel string, dirs map[string]bool) {
	for d := path.Dir(rel); d != "." && d != "/"; d = path.Dir(d) {
		if p.u.dest.root.Remove(d) != nil {
			return // not empty, or not ours to remove
		}
		p.dirs.forget(d)
		delete(dirs, d)
		dirs[path.Dir(d)] = true
	}
}
