package audit

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"golang.org/x/sync/errgroup"

	"github.com/rsdump/rsdump/deststate"
	"github.com/rsdump/rsdump/finding"
	"github.com/rsdump/rsdump/internal/digest"
	"github.com/rsdump/rsdump/unpack"
)

// readBuffer is each worker's: large sequential reads.
const readBuffer = 1 << 20

// checked is a file's check, as a worker hands it on.
type checked struct {
	e entry
	c unpack.FileCheck
}

// check reads the files the run picks, Jobs at once, and records each
// check as it completes.
func (a *auditor) check(ctx context.Context) error {
	var planned int64
	if err := a.picked(func(e entry) error {
		if e.Present {
			planned += e.Length
		}
		return nil
	}); err != nil {
		return err
	}
	finding.Send(a.opts.Events, finding.Planned{Bytes: planned})
	ctx, cancel := context.WithCancel(ctx) // a record that fails stops the reads
	defer cancel()
	g, gctx := errgroup.WithContext(ctx)
	todo := make(chan entry, 4*a.opts.Jobs)
	done := make(chan checked, 4*a.opts.Jobs)
	g.Go(func() error {
		defer close(todo)
		return a.picked(func(e entry) error {
			select {
			case todo <- e:
				return nil
			case <-gctx.Done():
				return gctx.Err()
			}
		})
	})
	workers, wctx := errgroup.WithContext(gctx)
	for range a.opts.Jobs {
		workers.Go(func() error {
			buf := make([]byte, readBuffer)
			for e := range todo {
				c, err := unpack.CheckFile(a.root, only(e.Record, a.opts.Hashes), true, buf)
				if err != nil {
					c.Problem, c.Err = finding.CheckRead, err
				}
				select {
				case done <- checked{e, c}:
				case <-wctx.Done():
					return wctx.Err()
				}
			}
			return nil
		})
	}
	g.Go(func() error {
		err := workers.Wait()
		close(done)
		return err
	})
	var err error
	for r := range done {
		if err == nil {
			if err = a.checkedOne(r); err != nil {
				cancel()
			}
		}
	}
	if gerr := g.Wait(); err == nil {
		err = gerr
	}
	if err == nil {
		err = ctx.Err()
	}
	return err
}

// checkedOne records a file's check: an event in the log and for each
// recorder, a finding when it does not hold, the entry among the
// results (and the damaged).
func (a *auditor) checkedOne(r checked) error {
	e, c := r.e, r.c
	ev := a.event(TypeFixity, only(e.Record, a.opts.Hashes))
	ev.Size, ev.Found = c.Size, c.Found
	a.sum.Checked++
	if c.Hashed {
		a.sum.CheckedBytes += c.Size
		finding.Send(a.opts.Events, finding.Progress{Bytes: c.Size})
	} else if e.Present {
		finding.Send(a.opts.Events, finding.Progress{Bytes: e.Length}) // planned, not read
	}
	e.Run, e.At, e.Failed = a.run, ev.Time, c.Problem != ""
	switch {
	case c.Problem != "":
		ev.Outcome, ev.Problem = Failure, c.Problem
		if c.Err != nil {
			ev.Detail = c.Err.Error()
		}
		a.sum.Failed++
		if c.Problem == finding.CheckMissing {
			a.sum.Missing++
		}
		a.failed(ev, c)
		if err := a.damaged.Add(e); err != nil {
			return err
		}
	case c.Unverified:
		ev.Outcome, ev.Detail = Success, "the written log records no hash rsdump computes: the length alone was checked"
		a.sum.Unverified++
	default:
		ev.Outcome = Success
		a.sum.OK++
	}
	if err := a.results.Add(e); err != nil {
		return err
	}
	return a.emit(ev)
}

// only is rec with the hashes of algs alone, when it carries any of them.
func only(rec deststate.Record, algs []string) deststate.Record {
	if len(algs) == 0 {
		return rec
	}
	have, err := digest.Parse(rec.Hash)
	if err != nil {
		return rec
	}
	var keep digest.Set
	for _, s := range have {
		if slices.Contains(algs, s.Alg) {
			keep = append(keep, s)
		}
	}
	if len(keep) > 0 {
		rec.Hash = keep.String()
	}
	return rec
}

// event is an event of the run about the file of rec, now.
func (a *auditor) event(typ string, rec deststate.Record) Event {
	return Event{ID: newUUID(), Run: a.sum.Run, Type: typ, Time: a.opts.Now().UTC(), Path: rec.Path, URI: a.uri(rec.Path),
		Length: rec.Length, Expected: rec.Hash}
}

// emit appends ev to the log and hands it to every recorder.
func (a *auditor) emit(ev Event) error {
	if err := a.log.add(ev); err != nil {
		return fmt.Errorf("%s: %w", statePath(LogName), err)
	}
	for _, r := range a.opts.Recorders {
		if err := r.Event(ev); err != nil {
			return err
		}
	}
	return nil
}

// failed reports a file that does not hold, naming what was expected and
// what was found.
func (a *auditor) failed(ev Event, c unpack.FileCheck) {
	f := finding.Finding{Severity: finding.Error, Code: c.Problem, Source: a.d.Path(), Path: ev.Path, URI: ev.URI}
	switch c.Problem {
	case finding.CheckMissing:
		f.Expected, f.Msg = describe(ev.Length, ev.Expected), "missing"
		if c.Err != nil {
			f.Msg = "missing: " + c.Err.Error()
		}
	case finding.CheckLength:
		f.Expected, f.Actual, f.Msg = strconv.FormatInt(ev.Length, 10), strconv.FormatInt(c.Size, 10), "length differs"
	case finding.CheckHash:
		m := c.Mismatch[0]
		f.Expected, f.Actual, f.Msg = m.Alg+":"+m.Want, m.Alg+":"+m.Got, m.Alg+" mismatch"
	default:
		f.Msg = c.Err.Error()
	}
	a.rep.Report(f)
}

func describe(length int64, hash string) string {
	s := "length=" + strconv.FormatInt(length, 10)
	if hash != "" {
		s += " " + hash
	}
	return s
}

// record writes the new record: every file rsdump owns, those checked
// with this run's time, in path order.
func (a *auditor) record() error {
	all, err := a.entries.Sorted()
	if err != nil {
		return err
	}
	got, err := a.results.Sorted()
	if err != nil {
		return err
	}
	rw, err := createRecord(a.root, a.run)
	if err != nil {
		return err
	}
	r, have, err := got.Next()
	for err == nil {
		var e entry
		var ok bool
		if e, ok, err = all.Next(); err != nil || !ok {
			break
		}
		if have && r.Path == e.Path {
			e = r
			r, have, err = got.Next()
		}
		a.age(&e)
		if err == nil {
			err = rw.add(&e)
		}
	}
	if err != nil {
		rw.abort()
		return err
	}
	return rw.commit()
}

// age counts e in the summary's view of the copy's coverage.
func (a *auditor) age(e *entry) {
	switch {
	case e.Run == 0:
		a.sum.NeverAudited++
	case a.sum.Oldest.IsZero() || e.At.Before(a.sum.Oldest):
		a.sum.Oldest = e.At
	}
}

// repair restores the files found damaged or missing, through
// opts.Repair, a batch at a time, and records a replacement event for
// each: a success when the file now holds (its sums as found), else a
// failure.
func (a *auditor) repair(ctx context.Context) error {
	if a.opts.Repair == nil || a.damaged.Len() == 0 {
		return nil
	}
	src, err := a.damaged.Sorted()
	if err != nil {
		return err
	}
	var batch []deststate.Record
	for {
		e, ok, err := src.Next()
		if err != nil {
			return err
		}
		if ok {
			batch = append(batch, e.Record)
		}
		if len(batch) > 0 && (!ok || len(batch) == repairBatch) {
			if err := a.repairBatch(ctx, batch); err != nil {
				return err
			}
			batch = batch[:0]
		}
		if !ok {
			return nil
		}
	}
}

var repairBatch = 50000

// ErrRepair wraps what made a repair fail as a whole (the Source not
// found, say): the checks are recorded all the same.
var ErrRepair = errors.New("repair")

func (a *auditor) repairBatch(ctx context.Context, recs []deststate.Record) error {
	res, err := a.opts.Repair(ctx, a.d, recs)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrRepair, err)
	}
	a.sum.Fetched += res.Fetched
	left := map[string]bool{}
	for _, r := range res.Unrepaired {
		left[r.Path] = true
	}
	for _, rec := range recs {
		ev := a.event(TypeReplacement, rec)
		ev.Size = -1
		var c unpack.FileCheck
		if !left[rec.Path] {
			if c, err = unpack.CheckFile(a.root, rec, true, nil); err != nil {
				c.Problem, c.Err = finding.CheckRead, err
			}
			ev.Size, ev.Found = c.Size, c.Found
		}
		switch {
		case left[rec.Path]:
			ev.Outcome, ev.Problem, ev.Detail = Failure, unpack.CheckDamaged, "no dump or list of the Source carries the version rsdump wrote"
		case c.Problem != "":
			ev.Outcome, ev.Problem, ev.Detail = Failure, unpack.CheckDamaged, "restored, but does not hold: "+c.Problem
		default:
			ev.Outcome, ev.Problem = Success, unpack.CheckRepaired
		}
		if ev.Outcome == Success {
			a.sum.Repaired++
		} else {
			a.sum.Unrepaired++
			a.rep.Report(finding.Finding{Severity: finding.Error, Code: unpack.CheckDamaged, Source: a.d.Path(), Path: rec.Path, URI: ev.URI,
				Expected: describe(rec.Length, rec.Hash), Msg: "not repaired: " + ev.Detail})
		}
		if err := a.emit(ev); err != nil {
			return err
		}
	}
	return nil
}
