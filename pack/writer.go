package pack

import (
	"context"
	"errors"
	"time"

	"github.com/rsdump/rsdump/finding"
	"github.com/rsdump/rsdump/resourcesync"
)

// done is a package written but not yet published.
type done struct {
	w        *pkgWriter
	plan     string
	manifest []byte
	info     PackageInfo
	reused   bool
}

// write consumes tasks in order: it opens each package, appends its files
// and hands it to publishing. On any error the package being written is
// removed.
func (r *run) write(ctx context.Context, tasks <-chan task, dones chan<- done) (err error) {
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
			if err := send(ctx, dones, done{info: *t.reused, reused: true}); err != nil {
				return err
			}
		case t.start != nil:
			curPlan = t.start
			if cur, err = newOutWriter(r.opts, r.out, r.journal, t.start, r.kind, r.now()); err != nil {
				return err
			}
		case t.end:
			m, info, err := cur.finish(r.now())
			if err != nil {
				return err
			}
			if err := send(ctx, dones, done{w: cur, plan: curPlan.plan, manifest: m, info: info}); err != nil {
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
	if t.it.change == resourcesync.ChangeDeleted {
		w.addDeleted(t.it)
		r.events(finding.Progress{Unit: t.it.rel})
		return nil
	}
	if t.fut == nil {
		skipped, err := w.addStreamed(ctx, t.it)
		if skipped {
			r.skipChanged(t.it)
			return err
		}
		if err == nil {
			r.events(finding.Progress{Bytes: t.it.size, Unit: t.it.rel})
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
	r.events(finding.Progress{Bytes: t.it.size, Unit: t.it.rel})
	return nil
}

func (r *run) skipChanged(it item) {
	r.skip(it.rel, "changed while read, left out (--skip-changed)")
}

// publish syncs and renames packages in order, in parallel with the
// writing of the next one, and records each in the journal. Packages
// already handed over are published even after an interruption: they are
// complete.
func (r *run) publish(dones <-chan done, cancel func()) error {
	var err error
	defer func() {
		if err != nil {
			cancel() // stop writing packages that cannot be published
		}
	}()
	for d := range dones {
		switch {
		case d.reused:
			if err == nil {
				if err = r.mode.packed(r, d.info, nil); err != nil {
					cancel()
					continue
				}
			}
			r.addPackage(d.info)
		case err != nil:
			d.w.abort()
		default:
			if err = d.w.publish(d.manifest, &d.info); err != nil {
				d.w.abort()
				cancel()
				continue
			}
			if err = r.journal.record(d.plan, d.info); err != nil {
				cancel()
				continue
			}
			if err = r.mode.packed(r, d.info, d.w.entries); err != nil {
				cancel()
				continue
			}
			r.addPackage(d.info)
		}
	}
	return err
}

func (r *run) addPackage(info PackageInfo) {
	r.pkgs = append(r.pkgs, info)
	r.events(PackageDone{Package: info})
}
