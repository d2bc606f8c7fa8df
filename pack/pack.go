// Package pack is the Source side of rsdump: it walks a directory and
// writes a ResourceSync Resource Dump, ZIP packages with a manifest.xml
// each and a resourcedump.xml listing them (Z39.99-2014 §11).
//
// Every source byte is read once: a worker reads a file into memory and
// feeds the manifest hashes, CRC-32 and compressor from that one buffer;
// files too large for that stream through the same hashes straight into
// the package. Packages are hashed as they are written.
package pack

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"
	"golang.org/x/sync/semaphore"

	"github.com/rsdump/rsdump/finding"
	"github.com/rsdump/rsdump/resourcesync"
	"github.com/rsdump/rsdump/s3"
)

// inflight bounds the bytes read ahead of the package writer.
const inflight = 96 << 20

// Pack writes a Resource Dump of the regular files under src into outDir,
// or with Options.Changes a Change Dump of what changed since a baseline.
// Running it again after an interruption reuses the packages already
// completed. outDir is a directory or s3://BUCKET/PREFIX, reached with the
// AWS environment and the s3.Config of ctx (package s3); packages are
// then streamed into multipart uploads, which a rerun resumes.
func Pack(ctx context.Context, src, outDir string, opts Options) (*Result, error) {
	o := opts
	if err := o.setDefaults(); err != nil {
		return nil, err
	}
	// A source that is not there must leave no output directory and no
	// journal behind.
	if err := checkSource(src, outDir); err != nil {
		return nil, err
	}
	if o.Parts > 0 {
		return packParts(ctx, src, outDir, o)
	}
	start := time.Now()
	out, err := openRunOutput(ctx, outDir, &o)
	if err != nil {
		return nil, err
	}
	defer out.close()
	at, pinned := o.At.UTC(), !o.At.IsZero()
	if !pinned {
		at = start.UTC().Truncate(time.Millisecond)
	}
	m := newMode(&o)
	r := &run{opts: &o, src: src, dir: outDir, out: out, pinned: pinned, mode: m, end: m, kind: m.kind()}
	r.events = serialize(o.Events)
	jname, key, err := m.open(ctx, r, optionsKey(&o, src))
	if err != nil {
		return nil, err
	}
	defer m.close()
	j, err := loadJournal(out, jname, r.ownsPending, key, at, pinned, r.kind)
	if err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	defer j.close()
	// Resuming, the interrupted run's time, so that its packages are
	// planned again alike.
	r.journal, r.at = j, j.head.At
	if err := m.start(ctx, r); err != nil {
		return nil, err
	}
	if err := j.begin(); err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	defer func() { r.list.abort() }()
	if err := m.begin(ctx, r); err != nil {
		return nil, err
	}
	switch {
	case o.dumpFromMirror:
		r.events(finding.Note{Msg: fmt.Sprintf("the packages' <loc> is the first mirror, %s: no --dump-url was given, and the base URL only names bitstreams", o.DumpURL)})
	case o.Metalink != nil && opts.DumpURL == "":
		r.events(finding.Note{Msg: fmt.Sprintf("the packages' <loc> and .meta4 URLs are under the base URL, %s, the only place known: give --dump-url or --mirror where they will be served", o.DumpURL)})
	}
	if err := r.pipeline(ctx); err != nil {
		return nil, err
	}
	return r.finish(start)
}

// checkSource refuses a source that is not a directory, or that is the
// output directory itself: a walk that left its output out would leave
// nothing. An output inside the source is left out by the walk.
func checkSource(src, outDir string) error {
	fi, err := os.Stat(src)
	var pe *fs.PathError
	switch {
	case errors.As(err, &pe):
		return &SourceError{Path: src, Err: pe.Err}
	case err != nil:
		return &SourceError{Path: src, Err: err}
	case !fi.IsDir():
		return &SourceError{Path: src, Err: errors.New("not a directory")}
	case !s3.IsURL(outDir) && realPath(outDir) == realDir(src):
		return &SourceError{Path: src, Err: ErrSourceIsOutput}
	}
	return nil
}

func optionsKey(o *Options, src string) string {
	abs, _ := filepath.Abs(src)
	var mirrors any
	if o.Metalink != nil {
		mirrors = o.Metalink.Mirrors
	}
	return fmt.Sprintf("%s|%s|%s|%s|%v|%s|%d|%d|%d|%v|%d", abs, o.BaseURL, o.DumpURL, o.CapabilityList,
		o.Hashes, o.Compress, o.Level, o.MaxPackageSize, o.MaxEntries, mirrors, pieceLength(o))
}

func serialize(f func(finding.Event)) func(finding.Event) {
	var mu sync.Mutex
	return func(e finding.Event) {
		mu.Lock()
		defer mu.Unlock()
		f(e)
	}
}

// run holds the state of one Pack call.
type run struct {
	opts    *Options
	src     string
	dir     string  // the output as given: a directory or s3://BUCKET/PREFIX
	out     *output // where everything is written
	at      time.Time
	pinned  bool
	journal *journal
	events  func(finding.Event)
	sem     *semaphore.Weighted
	kind    *dumpKind
	mode    mode       // what kind of run: the pipeline's points of difference
	end     finisher   // mode, or a merge's
	chg     *changeRun // a --changes run's state

	pkgs    []PackageInfo
	list    *listWriter // the Resource List, fed as packages are published
	skipped atomic.Int64
}

// task is what the package writer receives, in package order.
type task struct {
	start  *planned       // a package begins
	reused *PackageInfo   // the package begun is taken from the journal
	it     item           // a file to append...
	fut    chan *prepared // ...prepared by a worker, or nil to stream it
	end    bool           // the package is complete
}

type work struct {
	it  item
	fut chan *prepared
}

func (r *run) pipeline(parent context.Context) error {
	// A publishing failure cancels the rest of the run through this.
	parent, cancel := context.WithCancel(parent)
	defer cancel()
	g, ctx := errgroup.WithContext(parent)
	r.sem = semaphore.NewWeighted(inflight)
	plans := make(chan planned, 1)
	tasks := make(chan task, 4096)
	works := make(chan work, 64)
	g.Go(func() error { defer close(plans); return r.plan(ctx, plans) })
	g.Go(func() error { defer close(tasks); defer close(works); return r.dispatch(ctx, plans, tasks, works) })
	for range r.opts.Jobs {
		g.Go(func() error { return r.work(ctx, works) })
	}
	dones := make(chan done, 1)
	g.Go(func() error { defer close(dones); return r.write(ctx, tasks, dones) })
	// Publishing runs outside the group's context: what was handed to it is
	// complete and is published even when the run is interrupted.
	pubErr := make(chan error, 1)
	go func() { pubErr <- r.publish(dones, cancel) }()
	err := g.Wait()
	if perr := <-pubErr; perr != nil {
		err = perr // the cause; the group then only saw the cancellation
	}
	return err
}

func (r *run) plan(ctx context.Context, out chan<- planned) error {
	return r.mode.plan(ctx, r, func(pl planned) error { return send(ctx, out, pl) })
}

// skip reports a file the walk leaves out.
func (r *run) skip(path, msg string) {
	r.skipped.Add(1)
	r.warn(path, msg)
}

func (r *run) warn(path, msg string) {
	r.events(finding.Finding{Severity: finding.Warning, Path: path, Msg: msg})
}

func send[T any](ctx context.Context, c chan<- T, v T) error {
	select {
	case c <- v:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// dispatch hands small files to the workers and every file, in order, to
// the writer. The semaphore keeps read-ahead memory bounded.
func (r *run) dispatch(ctx context.Context, plans <-chan planned, tasks chan<- task, works chan<- work) error {
	for pl := range plans {
		t := task{start: &pl}
		if info, ok := r.journal.reusable(pl); ok {
			t.reused = &info
			if err := send(ctx, tasks, t); err != nil {
				return err
			}
			continue
		}
		if err := send(ctx, tasks, t); err != nil {
			return err
		}
		for _, it := range pl.items {
			if err := r.dispatchItem(ctx, it, tasks, works); err != nil {
				return err
			}
		}
		if err := send(ctx, tasks, task{end: true}); err != nil {
			return err
		}
	}
	return nil
}

func (r *run) dispatchItem(ctx context.Context, it item, tasks chan<- task, works chan<- work) error {
	if it.size > smallMax || it.change == resourcesync.ChangeDeleted {
		return send(ctx, tasks, task{it: it})
	}
	if err := r.sem.Acquire(ctx, budget(it)); err != nil {
		return err
	}
	fut := make(chan *prepared, 1)
	if err := send(ctx, works, work{it, fut}); err != nil {
		return err
	}
	return send(ctx, tasks, task{it: it, fut: fut})
}

// budget is the memory a small file may hold while prepared: its bytes
// and, briefly, their compressed copy.
func budget(it item) int64 { return 2*it.size + 4096 }

func (r *run) work(ctx context.Context, works <-chan work) error {
	enc, err := newEncoder(r.opts)
	if err != nil {
		return err
	}
	for w := range works {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		w.fut <- enc.prepare(w.it)
	}
	return nil
}

func (r *run) finish(start time.Time) (*Result, error) {
	completed := time.Now().UTC().Truncate(time.Millisecond)
	if r.pinned {
		completed = r.at
	}
	res := &Result{Packages: r.pkgs, Skipped: int(r.skipped.Load()), Document: r.out.Loc(r.kind.doc), DumpURL: r.opts.DumpURL}
	if err := r.end.finish(r, completed, res); err != nil {
		return nil, err
	}
	if err := r.journal.finish(); err != nil {
		return nil, err
	}
	r.prune()
	res.Elapsed = time.Since(start)
	res.Documents, res.Channels, res.CapabilityList = r.out.documents(), r.opts.Channels, r.opts.CapabilityList
	for _, p := range r.pkgs {
		res.Bitstreams += p.Bitstreams
		res.Bytes += p.Bytes
	}
	return res, nil
}

var errNoPackage = errors.New("pack: file task outside a package")
