package pack

import (
	"context"
	"errors"
	"time"
)

// write consumes tasks in order: it opens each package, appends its files
// and commits it. On any error the package being written is removed.
func (r *run) write(ctx context.Context, tasks <-chan task) (err error) {
	var cur *pkgWriter
	var curPlan *planned
	defer func() {
		if cur != nil {
			cur.abort()
		}
	}()
	for t := range tasks {
		if err := ctx.Err(); err != nil {
			return err // interrupted: stop before the next file
		}
		switch {
		case t.reused != nil:
			r.addPackage(*t.reused)
		case t.start != nil:
			curPlan = t.start
			if cur, err = newPkgWriter(r.opts, r.dir, t.start.name, r.now()); err != nil {
				return err
			}
		case t.end:
			if err := r.commit(cur, curPlan); err != nil {
				return err
			}
			cur = nil
		case cur == nil:
			return errNoPackage
		default:
			if err := r.append(ctx, cur, t); err != nil {
				return err
			}
		}
	}
	return ctx.Err()
}

// now is the time stamped on a package: the pinned snapshot time, if any.
func (r *run) now() time.Time {
	if r.pinned {
		return r.at
	}
	return time.Now().UTC().Truncate(time.Millisecond)
}

func (r *run) append(ctx context.Context, w *pkgWriter, t task) error {
	if t.fut == nil {
		skipped, err := w.addStreamed(t.it)
		if skipped {
			r.skipChanged(t.it)
			return err
		}
		if err == nil {
			r.events(FileDone{Path: t.it.rel, Bytes: t.it.size})
		}
		return err
	}
	var p *prepared
	select {
	case p = <-t.fut:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer r.sem.Release(budget(t.it))
	defer putBuf(p.data)
	if p.err != nil {
		if errors.Is(p.err, ErrChanged) && r.opts.SkipChanged {
			r.skipChanged(t.it)
			return nil
		}
		return p.err
	}
	if err := w.addPrepared(p); err != nil {
		return err
	}
	r.events(FileDone{Path: t.it.rel, Bytes: t.it.size})
	return nil
}

func (r *run) skipChanged(it item) {
	r.skip(it.rel, "changed while read, left out (--skip-changed)")
}

func (r *run) commit(w *pkgWriter, pl *planned) error {
	info, err := w.commit(r.now())
	if err != nil {
		return err
	}
	if err := r.journal.record(pl.plan, info); err != nil {
		return err
	}
	r.addPackage(info)
	return nil
}

func (r *run) addPackage(info PackageInfo) {
	r.pkgs = append(r.pkgs, info)
	r.events(PackageDone{Package: info})
}
