package unpack

import (
	"errors"
	"fmt"
	"time"

	"github.com/rsdump/rsdump/deststate"
	"github.com/rsdump/rsdump/finding"
	"github.com/rsdump/rsdump/resourcesync"
)

// CheckRollback is a finding about a snapshot older than the tree.
const CheckRollback = "rollback"

// ErrRollback is a snapshot older than what the tree holds: applying it
// would take the tree back in time, so it is refused unless Rollback.
var ErrRollback = errors.New("the snapshot is older than the tree")

// RollbackError names the snapshot and the two times.
type RollbackError struct {
	Dir      string    // the tree
	Snapshot string    // the dump, list or package
	At       time.Time // the snapshot's at; zero when it gives none
	Tree     deststate.State
}

func (e *RollbackError) Error() string {
	at := "gives no time (at)"
	if !e.At.IsZero() {
		at = "is a snapshot at " + ftime(e.At)
	}
	return fmt.Sprintf("%s %s, older than what %s holds (%s): applying it would take the tree back in time; nothing was written (--rollback restores exactly that snapshot)",
		e.Snapshot, at, e.Dir, e.Tree.Describe())
}

// Unwrap makes errors.Is(err, ErrRollback) hold.
func (e *RollbackError) Unwrap() error { return ErrRollback }

// older says whether a snapshot taken at `at` is older than the tree: the
// tree holds a later snapshot or later changes. A snapshot that gives no
// time cannot be shown not to be older, once the tree has a state.
func (u *unpacker) older(at time.Time) bool {
	since := u.state().Since()
	return !since.IsZero() && (at.IsZero() || at.Before(since))
}

// CheckWindow is a package whose manifest's times are not those its dump
// document gives it (pkgread.PackageRef.CheckWindow).
const CheckWindow = finding.CheckWindow

// trusted refuses, whole, a package whose manifest's at, from or until
// is not what the dump document's entry for it says, and a Resource
// Dump package older than the tree (unless the run rolls back),
// reporting why.
func (p *pkgRun) trusted() bool {
	md, ref := p.pkg.Header.MD, p.ref
	if f := ref.CheckWindow(md); f != nil {
		f.Msg = "package refused: " + f.Msg
		p.rep.Report(*f)
		return false
	}
	u := p.u
	if md.Capability != resourcesync.CapResourceDumpManifest || u.opts.Rollback || ref.Doc != "" && md.At.IsZero() || !u.older(md.At) {
		return true
	}
	err := &RollbackError{Dir: u.dest.dir, Snapshot: orText(ref.Loc, "the package"), At: md.At, Tree: u.state()}
	p.rep.Report(finding.Finding{Severity: finding.Error, Code: CheckRollback, Source: ref.Loc, Msg: "package refused: " + err.Error()})
	return false
}
