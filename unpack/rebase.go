package unpack

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"sync"
	"time"

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

// startRebase begins applying the snapshot: when every target is known
// already, the files the snapshot does not hold go first. The state
// records the snapshot as unfinished before the first change to the tree
// (markPending, from commit and removeLater), so that a run that fails
// part way, or is killed, leaves a record the next reads, and one that
// changes nothing (every change refused) leaves the state as it was.
func (u *unpacker) startRebase(ctx context.Context) error {
	if r := u.rebase; r == nil || !r.ahead {
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
		gone, err := p.removeLater(rec, dirs, why)
		if gone && u.opts.DryRun {
			r.gone[rec.Path] = true
		}
		return err
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
func (p *pkgRun) removeLater(rec deststate.Record, dirs map[string]bool, why string) (bool, error) {
	a := &action{b: &pkgread.Bitstream{}, target: rec.Path}
	fi, err := p.u.dest.checkTarget(rec.Path)
	switch {
	case err != nil:
		p.conflict(a, "not deleted: "+err.Error())
	case fi != nil: // gone already, else
		if err := p.removeOwned(a, fi, rec, dirs, why); err != nil {
			return false, err
		}
	}
	return err == nil && fi != nil && !a.failed, nil
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
