package pack

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/rsdump/rsdump/finding"
	"github.com/rsdump/rsdump/internal/digest"
	"github.com/rsdump/rsdump/internal/unixnano"
	"github.com/rsdump/rsdump/layout"
	"github.com/rsdump/rsdump/resourcesync"
)

// changeRun is the part of a run that only a --changes run has.
type changeRun struct {
	base    *baseline
	lists   *changeIndex  // changelist.xml, the Change List Index the run adds its Change List to
	dumps   *changeIndex  // changedump.xml, the Change Dump Index the run adds its Change Dump to
	seq0    int           // number of the last package written before
	walk    string        // temporary file: the walked files, in walk order
	sparse  bool          // the walk gives kept files as runs (walkRun)
	changes *sorter       // the changes found, to sort chronologically
	packed  *sorter       // the files packed, as published, to sort by path for the state
	found   [3]int        // created, updated, deleted
	touched int           // files --checksum found the same with another length or mtime
	walked  int64         // regular files walked
	old     chan *oldList // the baseline's Resource List, once checked
	stopOld chan struct{} // ends the check of old
	sw      stateOut      // the new state and Resource List, merged
	list    *listWriter
}

// changesMode writes a Change Dump of what changed since a baseline: the
// state of an earlier run, or a document --since names. Its state is the
// walk's, with the files packed as the run recorded them.
type changesMode struct {
	noHooks
	c *changeRun
}

func (*changesMode) kind() *dumpKind { return changeDump }

// open reads the baseline and the Change Dump already in the output
// directory, before anything is written; the journal's key names the
// baseline, so that a resumed run has the same one.
func (m *changesMode) open(ctx context.Context, r *run, key string) (string, string, error) {
	r.removeStaleTemps()
	if err := r.prepareChanges(ctx); err != nil {
		return "", "", err
	}
	m.c = r.chg
	return journalName, key + fmt.Sprintf("|changes|%v|%s", r.opts.Checksum, r.chg.base.key), nil
}

// start compares the walk with the baseline before the journal replaces
// an interrupted run's: a bad baseline fails the run first.
func (*changesMode) start(ctx context.Context, r *run) error { return r.findChanges(ctx) }

// begin starts the run's own Change List; its entries come as the
// packages are published.
func (*changesMode) begin(_ context.Context, r *run) error {
	r.list = newListWriter(r.opts, r.out, resourcesync.CapChangeList, layout.ChangeListName)
	return nil
}

func (*changesMode) plan(ctx context.Context, r *run, emit func(planned) error) error {
	return r.planChanges(ctx, emit)
}

// packed gives the Change List the package's entries, and records its
// bitstreams (not deletions) for the state.
func (*changesMode) packed(r *run, info PackageInfo, entries []resourcesync.URL) error {
	return r.eachEntry(info, entries, func(u resourcesync.URL, rec record) error {
		if rec.Rel != "" {
			if err := r.chg.packed.add(rec); err != nil {
				return err
			}
		}
		return r.list.add(listEntry(u))
	})
}

// previous keeps the documents the indexes name, and the packages
// numbered up to the last this run continues from: those are the earlier
// runs', named by the documents the index names, which the run does not
// read. A run that starts a new Change Dump keeps only its own.
func (*changesMode) previous(r *run) (func(string) bool, bool) {
	c := r.chg
	named := map[string]bool{}
	for _, x := range []*changeIndex{c.lists, c.dumps} {
		for _, u := range x.entries {
			named[resourcesync.BaseName(u.Loc)] = true
		}
	}
	continues := !c.dumps.replaced && len(c.dumps.entries) > 0
	return func(name string) bool {
		if named[name] {
			return true
		}
		zip := strings.TrimSuffix(strings.TrimSuffix(name, ".meta4"), ".manifest.xml")
		if !strings.HasSuffix(zip, ".zip") {
			zip += ".zip"
		}
		n := packageSeq(changeDump, zip)
		return continues && n > 0 && n <= c.seq0
	}, len(r.pkgs) > 0
}

// close removes the scratch files: the walk and the sorters' runs.
func (m *changesMode) close() {
	close(m.c.stopOld)
	waitOldList(m.c.old) // the check ended, or its result was taken
	m.c.base.close()
	os.Remove(m.c.walk)
	m.c.changes.close()
	m.c.packed.close()
}

// prepareChanges reads the baseline and the Change Dump already in the
// output directory, before anything is written.
func (r *run) prepareChanges(ctx context.Context) error {
	since, key, err := r.out.stateBaseline(r.opts.Since)
	if err != nil {
		return err
	}
	b, err := openBaseline(ctx, r.opts, r.out.scratch, since)
	if err != nil {
		return err
	}
	if key != "" {
		b.setKey(key)
	}
	r.chg = &changeRun{base: b, changes: newSorter(r.out.scratch, byTime), packed: newSorter(r.out.scratch, byPath)}
	if err := r.readPrevious(ctx); err != nil {
		b.close()
		return err
	}
	r.chg.stopOld = make(chan struct{})
	r.chg.old = r.checkOldList(r.chg.stopOld)
	return nil
}

// readPrevious reads the Change List Index and Change Dump Index in the
// output directory, not the documents they name. The run continues them
// when their last document ends where the baseline is, so that the
// changes have no gap and no overlap; otherwise it starts new ones, with
// names past the old ones, which are no longer named.
func (r *run) readPrevious(ctx context.Context) error {
	c := r.chg
	var err error
	if c.dumps, err = r.loadIndex(layout.ChangeDumpName, resourcesync.CapChangeDump); err != nil {
		return err
	}
	if c.lists, err = r.loadIndex(layout.ChangeListName, resourcesync.CapChangeList); err != nil {
		return err
	}
	single := c.dumps.single
	last, _ := c.dumps.continueAt(c.base.time)
	c.lists.continueAt(c.base.time)
	switch {
	case c.dumps.replaced:
		// Numbered past every package there, named or not: no earlier
		// document is needed, nor trusted, to start anew.
		err = r.topFiles(func(name string) { c.seq0 = max(c.seq0, packageSeq(changeDump, name)) })
	case single:
		c.seq0 = c.dumps.seq
	case len(c.dumps.entries) > 0:
		c.seq0, err = r.lastPackage(last.Loc)
	}
	if err != nil {
		return err
	}
	if c.dumps.replaced {
		r.events(finding.Note{Msg: fmt.Sprintf("%s ends at a time other than the baseline's %s: a new Change Dump replaces it, and its packages are no longer listed",
			r.out.Loc(layout.ChangeDumpName), resourcesync.FormatTime(c.base.time))})
	}
	return ctx.Err()
}

var seqRE = regexp.MustCompile(`-(\d{5,})\.zip$`)

func packageSeq(k *dumpKind, name string) int {
	m := seqRE.FindStringSubmatch(name)
	if m == nil || len(name) < len(k.prefix) || name[:len(k.prefix)] != k.prefix {
		return 0
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// findChanges compares the walk with the baseline, reading all of it,
// before the run replaces anything: a bad line in the baseline fails the
// run here.
func (r *run) findChanges(ctx context.Context) error {
	if !r.at.After(r.chg.base.time) {
		return fmt.Errorf("the run's time %s is not after the baseline's %s (%s): no change can be placed between them",
			resourcesync.FormatTime(r.at), resourcesync.FormatTime(r.chg.base.time), r.chg.base.name)
	}
	return r.diff(ctx, r.chg.changes)
}

// planChanges plans the changes findChanges found, in chronological
// order, into packages.
func (r *run) planChanges(ctx context.Context, emit func(planned) error) error {
	src, err := r.chg.changes.sorted()
	if err != nil {
		return err
	}
	p := &planner{opts: r.opts, kind: changeDump, seq: r.chg.seq0, from: r.chg.base.time, until: r.at, emit: emit}
	for {
		rec, ok, err := src.next()
		if err != nil {
			return err
		}
		if !ok {
			return p.flush()
		}
		if err := p.add(r.changeItem(rec)); err != nil {
			return err
		}
	}
}

func (r *run) changeItem(rec record) item {
	it := item{rel: rec.Rel, abs: filepath.Join(r.src, filepath.FromSlash(rec.Rel)), size: rec.Size,
		mtime: unixnano.Time(rec.Mtime), mode: fs.FileMode(rec.Mode), change: rec.Change, datetime: unixnano.Time(rec.Datetime)}
	if rec.Change == resourcesync.ChangeDeleted {
		it.oldHash = rec.Hash
	}
	return it
}

// differ joins the walk and the baseline, both in walk order: a file on
// one side only is created or deleted, one on both whose length or mtime
// differ (with --checksum: whose length or hash differ) is updated. A file
// whose length and mtime match is not read.
type differ struct {
	r       *run
	base    recSource
	cur     record
	curN    int64 // cur is the baseline's curN-th file
	have    bool
	state   *recWriter
	changes *sorter
	from    int64
	at      int64
	sparse  bool  // kept files go as runs (walkRun), not a line each
	kept    int64 // kept files since the last line written, when sparse
}

func (r *run) diff(ctx context.Context, changes *sorter) error {
	f, err := os.CreateTemp(r.out.scratch, ".rsdump-walk-*.tmp")
	if err != nil {
		return err
	}
	r.chg.walk = f.Name()
	defer f.Close()
	r.chg.sparse = r.chg.takesDelta(r.opts) && r.chg.old != nil
	d := &differ{r: r, base: r.chg.base.src, state: newRecWriter(f), changes: changes,
		from: unixnano.Of(r.chg.base.time), at: unixnano.Of(r.at), sparse: r.chg.sparse}
	if err := d.advance(); err != nil {
		return err
	}
	w := &walker{ctx: ctx, follow: r.opts.FollowSymlinks, visit: d.visit, warn: r.skip, noAbs: true}
	if r.out.dir != "" {
		w.exclude = realPath(r.dir)
	}
	if err := w.walk(r.src); err != nil {
		return err
	}
	for d.have {
		if err := d.deleted(); err != nil {
			return err
		}
	}
	if err := d.flushKept(); err != nil {
		return err
	}
	if err := d.state.flush(); err != nil {
		return err
	}
	return f.Close()
}

func (d *differ) advance() error {
	r, ok, err := d.base.next()
	if err != nil {
		return &BaselineError{Path: d.r.chg.base.name, Err: err}
	}
	d.cur, d.have = r, ok
	if ok {
		d.curN++
	}
	return nil
}

func (d *differ) visit(it item) error {
	d.r.chg.walked++
	for d.have && comparePaths(d.cur.Rel, it.rel) < 0 {
		if err := d.deleted(); err != nil {
			return err
		}
	}
	if d.have && d.cur.Rel == it.rel {
		old, n := d.cur, d.curN
		if err := d.advance(); err != nil {
			return err
		}
		return d.compare(old, n, it)
	}
	return d.changed(record{Rel: it.rel}, it, resourcesync.ChangeCreated)
}

func (d *differ) deleted() error {
	old := d.cur
	if err := d.advance(); err != nil {
		return err
	}
	d.r.chg.found[2]++
	old.Change, old.Datetime, old.Mode = resourcesync.ChangeDeleted, d.at, 0
	if err := d.changes.add(old); err != nil {
		return err
	}
	// In the walk's lines too, for a delta of the state (mergeState).
	return d.write(&record{Rel: old.Rel, Change: resourcesync.ChangeDeleted})
}

// compare records an unchanged file as the baseline has it, its n-th;
// n goes in Seq (see feedList) when the record is the baseline's.
func (d *differ) compare(old record, n int64, it item) error {
	same := old.Size == it.size && old.Mtime == unixnano.Of(it.mtime)
	if d.r.opts.Checksum {
		var err error
		if same, err = sameContent(d.r.src, old, it); err != nil {
			return err
		}
	}
	if !same {
		return d.changed(old, it, resourcesync.ChangeUpdated)
	}
	rec := record{Rel: it.rel, Size: it.size, Mtime: unixnano.Of(it.mtime), Hash: old.Hash, Type: old.Type}
	if rec.Size == old.Size && rec.Mtime == old.Mtime {
		rec.Seq = n // not so when --checksum found a file touched
		if d.sparse {
			d.kept++
			return nil
		}
	} else {
		d.r.chg.touched++
	}
	return d.write(&rec)
}

// write writes a line of the walk, after the run of kept files before it.
func (d *differ) write(rec *record) error {
	if err := d.flushKept(); err != nil {
		return err
	}
	return d.state.write(rec)
}

// flushKept writes the run of kept files not yet written, if any.
func (d *differ) flushKept() error {
	if d.kept == 0 {
		return nil
	}
	n := d.kept
	d.kept = 0
	return d.state.writeRun(n)
}

// changed records a creation or update. The walk state keeps the
// baseline's version (none for a creation) with the change and the new
// length and mtime in Change, Seq and Datetime; writeChangeState puts the new
// version in the state once it is in a package, or keeps the old one when
// --skip-changed left the file out.
func (d *differ) changed(old record, it item, change string) error {
	if change == resourcesync.ChangeCreated {
		d.r.chg.found[0]++
	} else {
		d.r.chg.found[1]++
	}
	mt := unixnano.Of(it.mtime)
	when := mt
	if when <= d.from || when > d.at {
		// The file's time is not in the interval the run covers (copied
		// with its old time, or changed during the run): the change is
		// placed at the run's time, when it was seen. The file keeps its
		// own time as the entry's lastmod.
		when = d.at
	}
	c := record{Rel: it.rel, Size: it.size, Mtime: mt, Mode: uint32(it.mode), Change: change, Datetime: when}
	if err := d.changes.add(c); err != nil {
		return err
	}
	return d.write(&record{Rel: it.rel, Size: old.Size, Mtime: old.Mtime, Hash: old.Hash, Type: old.Type, Change: change, Datetime: mt, Seq: it.size})
}

// sameContent is --checksum's test: same length, and the same hash in
// every algorithm the baseline gives that rsdump knows.
func sameContent(src string, old record, it item) (bool, error) {
	if old.Size != it.size {
		return false, nil
	}
	set, err := digest.Parse(old.Hash)
	algs := set.Known()
	if err != nil || len(algs) == 0 {
		return false, nil // nothing to compare with: ship it
	}
	mh, err := digest.NewMulti(algs...)
	if err != nil {
		return false, err
	}
	f, err := os.Open(filepath.Join(src, filepath.FromSlash(it.rel)))
	if err != nil {
		return false, &FileError{Path: it.rel, Err: err}
	}
	defer f.Close()
	if _, err := f.WriteTo(mh); err != nil {
		return false, &FileError{Path: it.rel, Err: err}
	}
	_, bad, _ := digest.Check(set, mh.Sums())
	return len(bad) == 0 && mh.Len() == it.size, nil
}
