package unpack

import (
	"context"
	"slices"

	"github.com/rsdump/rsdump/pkgread"
	"github.com/rsdump/rsdump/resourcesync"
)

// pipeline stages packages that commit in order, up to Jobs at once: the
// next ones stage while one stages and commits. Every package but the
// first staged is staged speculatively (see stagePackage).
type pipeline struct {
	u     *unpacker
	refs  []pkgread.PackageRef
	queue []*ahead // packages after the current one, staging, in order
	next  int      // the next package to start
}

func (u *unpacker) newPipeline(refs []pkgread.PackageRef) *pipeline {
	return &pipeline{u: u, refs: refs, next: 1}
}

// apply stages package i, or takes it staged ahead, and commits it. It
// first starts the packages after i, up to the window, so that they stage
// while i stages and commits.
func (pl *pipeline) apply(ctx context.Context, i int) (outcome, error) {
	var cur *ahead
	if len(pl.queue) > 0 && pl.queue[0].i == i {
		cur, pl.queue = pl.queue[0], pl.queue[1:]
	}
	window := max(1, pl.u.opts.Jobs)
	for pl.next = max(pl.next, i+1); pl.next < len(pl.refs) && len(pl.queue) < window-1; pl.next++ {
		if a := pl.u.stageAhead(ctx, pl.next, pl.refs[pl.next]); a != nil {
			pl.queue = append(pl.queue, a)
		}
	}
	p, err := cur.wait(ctx, pl.u, pl.refs[i])
	if err != nil {
		return outcome{}, err
	}
	defer p.release()
	return p.commitPackage()
}

// skip throws away package i, if it was started ahead.
func (pl *pipeline) skip(i int) {
	if len(pl.queue) > 0 && pl.queue[0].i == i {
		pl.queue[0].discard()
		pl.queue = pl.queue[1:]
	}
}

// take throws away package i, if it was started ahead, and returns its
// meter, which has counted what the staging read; nil when it was not
// started. pl may be nil.
func (pl *pipeline) take(i int) *pkgread.Meter {
	if pl == nil {
		return nil
	}
	for k, a := range pl.queue {
		if a.i != i {
			continue
		}
		<-a.done
		var m *pkgread.Meter
		if a.p != nil {
			m = a.p.m
		}
		a.discard()
		pl.queue = slices.Delete(pl.queue, k, k+1)
		return m
	}
	return nil
}

// close throws away every package started and not taken.
func (pl *pipeline) close() {
	for _, a := range pl.queue {
		a.discard()
	}
	pl.queue = nil
}

// ahead is a package being staged, speculatively, while the packages
// before it stage and commit.
type ahead struct {
	i    int
	done chan struct{}
	p    *pkgRun
	err  error
}

// stageAhead starts staging the package at index i, unless it would not
// apply anyway (its until is at or before the state's), or this is a dry
// run, which stages nothing.
func (u *unpacker) stageAhead(ctx context.Context, i int, ref pkgread.PackageRef) *ahead {
	if until := ref.Until(); u.opts.DryRun || !until.IsZero() && !u.state().Applies(until) {
		return nil
	}
	a := &ahead{i: i, done: make(chan struct{})}
	go func() {
		defer close(a.done)
		a.p, a.err = u.stagePackage(ctx, ref, claimed{}, true)
	}()
	return a
}

// wait returns the staged package, staging it now when nothing was
// staged ahead.
func (a *ahead) wait(ctx context.Context, u *unpacker, ref pkgread.PackageRef) (*pkgRun, error) {
	if a == nil {
		return u.stagePackage(ctx, ref, claimed{}, false)
	}
	<-a.done
	return a.p, a.err
}

// discard waits for the staging to end and throws it away.
func (a *ahead) discard() {
	if a == nil {
		return
	}
	<-a.done
	if a.p != nil {
		a.p.release()
	}
}

// PackageResult is what one package of UnpackInOrder came to.
type PackageResult struct {
	Result
	Header resourcesync.Header // the manifest's; zero when the package could not be read
}

// UnpackInOrder unpacks the local packages at paths into dir, in that
// order, as Unpack of each in turn would, but with up to Jobs of them
// staging at once: each commits only after the one before it, and Change
// Dump packages decide whether they apply only then. each is told what
// became of each package, in order; when it returns false, the packages
// after are not applied. The error is for a destination that cannot be
// used or a cancelled context, as Unpack's.
func UnpackInOrder(ctx context.Context, paths []string, dir string, opts Options, each func(i int, r *PackageResult) bool) error {
	u, err := start(dir, opts)
	if err != nil {
		return err
	}
	defer u.dest.close()
	refs := make([]pkgread.PackageRef, len(paths))
	for i, p := range paths {
		refs[i] = pkgread.PackageRef{Loc: p, Length: -1}
	}
	pkgread.Announce(refs, u.opts.Events)
	pl := u.newPipeline(refs)
	defer pl.close()
	for i := range refs {
		before := u.result()
		out, err := pl.apply(ctx, i)
		if err != nil {
			return err
		}
		if err := u.standaloneState(out, paths[i]); err != nil {
			return err
		}
		if !each(i, packageResult(before, u.result(), out)) {
			return nil
		}
	}
	return nil
}

// packageResult is one package's share of a run: what it committed (no
// other package commits meanwhile), and its own refusals and findings
// (others stage meanwhile).
func packageResult(before, after *Result, out outcome) *PackageResult {
	r := &PackageResult{Header: out.header}
	r.Written, r.Present = after.Written-before.Written, after.Present-before.Present
	r.Deleted, r.Bytes = after.Deleted-before.Deleted, after.Bytes-before.Bytes
	r.Refused, r.Counts = out.refused, out.counts
	if out.header.MD.Capability != "" {
		r.Packages = 1
	}
	return r
}
