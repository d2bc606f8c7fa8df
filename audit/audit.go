// Package audit checks a Destination's copy against what rsdump wrote
// there, on a schedule a repository can keep, and records every check
// where preservation systems read it: rsdump audit as a library.
//
// A run reads the tree's written log (deststate: every file rsdump owns,
// with the length and hashes of the manifest it was written from), reads
// no network, and checks the files its Selection picks: missing, then the
// length, then every hash the record carries, computed in one read of the
// file, files in parallel (unpack.CheckFile, the check repair makes).
// Files in the tree rsdump did not write are listed apart. A fraction K/N
// checks the least recently audited K/N of the bytes, so that N runs
// cover the copy, and no file waits more than a round of N runs; the
// record of when each file was last checked lives in DIR/.rsdump/audit/
// (RecordName), in path order, merged with the written log's files in
// bounded memory and replaced whole by each run. Every check, every
// repair (Options.Repair) and each run's summary are appended to the log
// there (LogName), JSON Lines; a Recorder renders them as they come
// (PREMIS, CSV).
package audit

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/rsdump/rsdump/deststate"
	"github.com/rsdump/rsdump/finding"
	"github.com/rsdump/rsdump/internal/extsort"
	"github.com/rsdump/rsdump/resourcesync"
	"github.com/rsdump/rsdump/unpack"
	"github.com/rsdump/rsdump/version"
)

// Options configure Run.
type Options struct {
	Select Selection
	// Repair, when set, restores the files the run found missing or
	// damaged, d held open and locked by the run: replica.RepairFiles,
	// sync's repair from the Source the tree's state records, is the one
	// rsdump audit --repair gives. Each file gets a replacement event.
	Repair func(ctx context.Context, d *deststate.Dir, recs []deststate.Record) (*unpack.RepairResult, error)
	// Hashes, when set, are the only algorithms checked of those a
	// file's record carries (blake3, say: the fastest); a file whose
	// record carries none of them is checked with all of its own. By
	// default every hash the record carries is checked.
	Hashes []string
	// Jobs is how many files are read at once; default GOMAXPROCS.
	Jobs int
	// BaseURL is the URI prefix the tree maps, for the events' URIs;
	// default the one sync recorded. Without either, a file's URI is its
	// file: URL.
	BaseURL string
	// Now is the clock; default time.Now.
	Now func() time.Time
	// Events receives the run's progress (finding.Planned, the bytes to
	// read, and finding.Progress), a finding for each file that does not
	// hold (an Error) and each extra file (a Warning), and notes.
	Events func(finding.Event)
	// Recorders receive every event and the summary.
	Recorders []Recorder
}

// Run audits the tree dir: it checks the files opts.Select picks, records
// the checks, and with opts.Repair restores what does not hold. The
// error is for a tree that cannot be audited at all (no written log, a
// lock held, an unreadable record) or a log or record that cannot be
// written; files that do not hold are in the Summary.
func Run(ctx context.Context, dir string, opts Options) (*Summary, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Jobs <= 0 {
		opts.Jobs = runtime.GOMAXPROCS(0)
	}
	if fi, err := os.Stat(filepath.Join(dir, deststate.DirName)); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("%s: %w", dir, ErrNotCopy)
	}
	d, err := deststate.Open(dir, deststate.Options{Command: "audit", KeepCache: true})
	if err != nil {
		return nil, err
	}
	defer d.Close()
	a := &auditor{opts: opts, d: d, root: d.Root(), rep: finding.NewReporter(opts.Events), start: opts.Now().UTC()}
	defer a.close()
	if err := a.prepare(); err != nil {
		return nil, err
	}
	return a.audit(ctx)
}

// ErrNotCopy is a directory rsdump keeps no copy in: it has no
// deststate.DirName. Run creates nothing in it.
var ErrNotCopy = errors.New("not a copy rsdump keeps (no " + deststate.DirName + " directory: unpack or sync writes one)")

type auditor struct {
	opts  Options
	d     *deststate.Dir
	root  *os.Root
	rep   *finding.Reporter
	start time.Time
	run   int64 // this run's number
	base  string
	log   *eventLog
	sum   Summary
	// every file rsdump owns, as the run leaves it (entries); those it
	// picks (selected), in the order it checks them; those it checked
	// (results) and that failed (damaged), in path order.
	entries, selected, results, damaged *extsort.Sorter[entry]
}

func (a *auditor) sorter(cmp func(x, y *entry) int) *extsort.Sorter[entry] {
	return extsort.New(a.d.Scratch(), ".rsdump-audit-*.tmp", sortRun, cmp, entryCodec).Total()
}

var sortRun = 1 << 16 // entries sorted in memory at once; a variable for tests

func (a *auditor) close() {
	for _, s := range []*extsort.Sorter[entry]{a.entries, a.selected, a.results, a.damaged} {
		if s != nil {
			s.Close()
		}
	}
	if a.log != nil {
		a.log.close()
	}
}

// prepare settles the URIs' base and opens the log.
func (a *auditor) prepare() error {
	st := a.d.State()
	a.base = a.opts.BaseURL
	if a.base == "" && st.Sync != nil {
		a.base = st.Sync.BaseURL
	}
	if a.base != "" {
		b, err := resourcesync.CleanBaseURL(a.base)
		if err != nil {
			return fmt.Errorf("base URL: %w", err)
		}
		a.base = b
	}
	a.sum = Summary{Run: newUUID(), Type: TypeSummary, Dir: a.d.Path(), URI: a.base, Selection: a.opts.Select.String(), Started: a.start, Agent: Agent()}
	if a.base == "" {
		a.sum.URI = fileURL(a.d.Path() + "/")
	}
	a.entries, a.results, a.damaged = a.sorter(byPath), a.sorter(byPath), a.sorter(byPath)
	var err error
	a.log, err = openLog(a.root)
	return err
}

// Agent is rsdump and its version, as the events name their agent.
func Agent() string { return "rsdump/" + version.Version() }

// uri is the URI of the file at rel: the resource's, under the base URL,
// else the file's own file: URL.
func (a *auditor) uri(rel string) string {
	if a.base != "" {
		return resourcesync.LocFor(a.base, rel)
	}
	return fileURL(filepath.Join(a.d.Path(), filepath.FromSlash(rel)))
}

func fileURL(p string) string { return (&url.URL{Scheme: "file", Path: filepath.ToSlash(p)}).String() }

func (a *auditor) audit(ctx context.Context) (*Summary, error) {
	for _, r := range a.opts.Recorders {
		if err := r.Begin(a.sum); err != nil {
			return nil, err
		}
	}
	if err := a.survey(ctx); err != nil {
		return nil, err
	}
	if err := a.check(ctx); err != nil {
		return nil, err
	}
	if err := a.record(); err != nil {
		return nil, err
	}
	if err := a.repair(ctx); err != nil {
		return nil, err
	}
	a.sum.Ended = a.opts.Now().UTC()
	if err := a.log.add(a.sum); err != nil {
		return nil, err
	}
	for _, r := range a.opts.Recorders {
		if err := r.End(a.sum); err != nil {
			return nil, err
		}
	}
	err := a.log.close()
	a.log = nil
	if err != nil {
		return nil, fmt.Errorf("%s: %w", statePath(LogName), err)
	}
	return &a.sum, nil
}

// walk lists the tree's files (not directories, not rsdump's state
// directory), sorted by path as the written log's owned records are.
func (a *auditor) walk(ctx context.Context) (*extsort.Sorter[string], error) {
	s := extsort.New(a.d.Scratch(), ".rsdump-audit-walk-*.tmp", sortRun, func(x, y *string) int { return strings.Compare(*x, *y) }, extsort.Strings).Total()
	err := deststate.WalkTree(ctx, a.d.Path(), func(rel string, _ fs.DirEntry, err error) error {
		if err != nil {
			// An unreadable directory: the files rsdump owns in it are
			// not walked, so they are checked, and each fails to be read.
			return nil
		}
		return s.Add(rel)
	})
	if err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// survey merges the written log's owned files with the record and the
// walk, in path order: each owned file becomes an entry, what its last
// audit says of it and whether the tree holds it; a walked file rsdump
// does not own is an extra. It picks the files to check.
func (a *auditor) survey(ctx context.Context) error {
	rr, runs, err := openRecord(a.root)
	if err != nil {
		return fmt.Errorf("%s: %w", a.d.Path(), err)
	}
	defer rr.close()
	a.run = runs + 1
	ws, err := a.walk(ctx)
	if err != nil {
		return err
	}
	defer ws.Close()
	walked, err := ws.Sorted()
	if err != nil {
		return err
	}
	w := &walkHead{src: walked}
	if err := w.next(); err != nil {
		return err
	}
	sel := a.opts.Select
	if sel.Mode == Fraction {
		a.selected = a.sorter(func(x, y *entry) int { return sel.compare(x, y, a.run) })
	} else {
		a.selected = a.sorter(byPath)
	}
	_, err = a.d.Owned(ctx, a.d.Scratch(), func(rec deststate.Record) error {
		for w.ok && w.path < rec.Path {
			a.extra(w.path)
			if err := w.next(); err != nil {
				return err
			}
		}
		e := entry{Record: rec, Seen: a.run, Present: w.ok && w.path == rec.Path}
		if e.Present {
			if err := w.next(); err != nil {
				return err
			}
		}
		if l, ok := rr.find(rec.Path); ok && l.V == fingerprint(rec) {
			e.Seen, e.Run, e.At, e.Failed = l.Seen, l.Run, l.At, l.Failed
		}
		return a.add(e)
	})
	if err == nil {
		err = rr.err
	}
	for err == nil && w.ok {
		a.extra(w.path)
		err = w.next()
	}
	return err
}

// add counts an owned file, and offers it to the selection.
func (a *auditor) add(e entry) error {
	a.sum.Files++
	a.sum.Bytes += e.Length
	if err := a.entries.Add(e); err != nil {
		return err
	}
	if a.opts.Select.Mode == Fraction || forced(&e) || a.opts.Select.picks(&e, a.start) {
		return a.selected.Add(e)
	}
	return nil
}

func (a *auditor) extra(rel string) {
	a.sum.Extras++
	a.rep.Report(finding.Finding{Severity: finding.Warning, Code: finding.CheckExtra, Source: a.d.Path(), Path: rel,
		Msg: "file rsdump did not write: left as it is"})
}

// walkHead is the walk's next path.
type walkHead struct {
	src  extsort.Source[string]
	path string
	ok   bool
}

func (w *walkHead) next() (err error) {
	w.path, w.ok, err = w.src.Next()
	return err
}

// compare orders a fraction's files: by ageKey, then path.
func (s Selection) compare(x, y *entry, run int64) int {
	kx, ky := s.key(x, run), s.key(y, run)
	switch {
	case kx.class != ky.class:
		return kx.class - ky.class
	case kx.value < ky.value:
		return -1
	case kx.value > ky.value:
		return 1
	}
	return strings.Compare(x.Path, y.Path)
}

// picker says, of the selected entries in their order, which the run
// checks: with a fraction, those it must, then the others until the
// budget of bytes is spent; otherwise all of them.
type picker struct {
	sel    Selection
	run    int64
	budget int64
	spent  int64
}

func (p *picker) take(e *entry) bool {
	if p.sel.Mode != Fraction {
		return true
	}
	if p.sel.key(e, p.run).class == 0 || p.spent < p.budget {
		if e.Present {
			p.spent += e.Length
		}
		return true
	}
	return false
}

func (a *auditor) picker() *picker {
	p := &picker{sel: a.opts.Select, run: a.run}
	if p.sel.Mode == Fraction {
		p.budget = p.sel.budget(a.sum.Bytes)
	}
	return p
}

// picked streams the entries the run checks to fn.
func (a *auditor) picked(fn func(entry) error) error {
	src, err := a.selected.Sorted()
	if err != nil {
		return err
	}
	p := a.picker()
	for {
		e, ok, err := src.Next()
		if err != nil || !ok {
			return err
		}
		if p.take(&e) {
			if err := fn(e); err != nil {
				return err
			}
		}
	}
}
