package unpack

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/rsdump/rsdump/deststate"
	"github.com/rsdump/rsdump/finding"
	"github.com/rsdump/rsdump/internal/extsort"
	"github.com/rsdump/rsdump/pkgread"
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

// checkSnapshot refuses a snapshot older than the tree, unless the run
// rolls back on purpose; rolling back, it starts the record of the
// snapshot's targets, for the files of the tree's later state to go.
func (u *unpacker) checkSnapshot(loc string, at time.Time) error {
	if !u.older(at) {
		return nil
	}
	if !u.opts.Rollback {
		return &RollbackError{Dir: u.dest.dir, Snapshot: loc, At: at, Tree: u.state()}
	}
	u.rollback = &rollback{from: u.state().Since(), to: at, doc: loc,
		targets: extsort.New(u.scratchDir(), ".rsdump-snapshot-*.tmp", 1<<16, compareTargets, extsort.Strings)}
	return nil
}

// rollback is a snapshot being applied over a later state: the targets
// it holds, sorted on disk, and what it replaces.
type rollback struct {
	from, to time.Time
	doc      string
	mu       sync.Mutex
	targets  *extsort.Sorter[string]
	err      error
}

// hold records the targets of a package's actions: what the snapshot
// keeps.
func (r *rollback) hold(actions []*action) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, a := range actions {
		if r.err == nil && !a.b.Deleted() {
			r.err = r.targets.Add(a.target)
		}
	}
}

// finishRollback removes every file rsdump owns that the snapshot does not
// hold, once every package of it applied, and records the rollback. A
// file changed since rsdump wrote it is kept and reported.
func (u *unpacker) finishRollback(ctx context.Context, s *deststate.State) error {
	r := u.rollback
	defer r.targets.Close()
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
	cur, ok, err := held.Next()
	dirs := map[string]bool{}
	_, err2 := u.dest.st.Owned(ctx, u.scratchDir(), func(rec deststate.Record) error {
		for ; err == nil && ok && cur < rec.Path; cur, ok, err = held.Next() {
		}
		if err != nil || ok && cur == rec.Path {
			return err
		}
		p.removeLater(rec, dirs)
		return nil
	})
	if err == nil {
		err = err2
	}
	if err != nil {
		return err
	}
	for d := range dirs {
		if err := u.dest.syncDir(d); err != nil && !u.opts.DryRun {
			return fmt.Errorf("%s: syncing %s: %w", u.dest.dir, d, err)
		}
	}
	if err := u.dest.st.Append(p.recs); err != nil {
		return err
	}
	s.Rollback = &deststate.Rollback{From: r.from, To: r.to, Document: r.doc, When: time.Now().UTC()}
	return nil
}

// removeLater deletes a file of the tree's later state, when it is still
// the one rsdump wrote.
func (p *pkgRun) removeLater(rec deststate.Record, dirs map[string]bool) {
	a := &action{b: &pkgread.Bitstream{}, target: rec.Path}
	fi, err := p.u.dest.checkTarget(rec.Path)
	switch {
	case err != nil:
		p.conflict(a, "not deleted: "+err.Error())
	case fi != nil: // gone already, else
		p.removeOwned(a, fi, rec, dirs, "not in the snapshot rolled back to")
	}
}

func compareTargets(a, b *string) int { return strings.Compare(*a, *b) }

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
