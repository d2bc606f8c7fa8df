package pack

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"time"

	"github.com/rsdump/rsdump/internal/digest"
	"github.com/rsdump/rsdump/resourcesync"
)

// changeRun is the part of a run that only a --changes run has.
type changeRun struct {
	base  *baseline
	prev  []resourcesync.URL // packages of the Change Dump this run continues
	seq0  int                // number of the last package written before
	walk  string             // temporary file: the walked files, in walk order
	found [3]int             // created, updated, deleted
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
		b.key = fmt.Sprintf("%s|%s|%s", b.kind, key, resourcesync.FormatTime(b.time))
	}
	r.chg = &changeRun{base: b}
	return r.readPrevious(ctx)
}

// readPrevious loads the Change Dump in the output directory. The run
// continues it when its last package ends where the baseline is, so that
// the Change Dump has no gap and no overlap; otherwise the run starts a
// new one, with package numbers past the old ones, which are no longer
// listed.
func (r *run) readPrevious(ctx context.Context) error {
	doc := r.out.Loc(ChangeDumpName)
	if ok, err := r.out.exists(ChangeDumpName); !ok || err != nil {
		return err
	}
	var urls []resourcesync.URL
	l := &resourcesync.Loader{Entry: func(d *resourcesync.Document, _ int, u resourcesync.URL) error {
		if d.Header.Kind == resourcesync.URLSet {
			urls = append(urls, u)
		}
		return nil
	}}
	if err := r.out.load(l, ChangeDumpName); err != nil {
		return fmt.Errorf("the Change Dump to continue: %w", err)
	}
	// The packages up to the one that ends at the baseline's time: any
	// after it are those of this very run, killed after it wrote the
	// document but before the state, and are planned again alike.
	end := -1
	for i, u := range urls {
		if u.MD != nil && u.MD.Until.Equal(r.chg.base.time) {
			end = i
		}
	}
	if end >= 0 {
		urls = urls[:end+1]
	}
	for _, u := range urls {
		if n := packageSeq(changeDump, resourcesync.BaseName(u.Loc)); n > r.chg.seq0 {
			r.chg.seq0 = n
		}
	}
	if end >= 0 {
		r.chg.prev = urls
		return nil
	}
	if len(urls) > 0 {
		r.events(Notice{Msg: fmt.Sprintf("%s ends at a time other than the baseline's %s: a new Change Dump replaces it, and its packages are no longer listed",
			doc, resourcesync.FormatTime(r.chg.base.time))})
	}
	return nil
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

// planChanges compares the walk with the baseline and plans the changes,
// in chronological order, into packages.
func (r *run) planChanges(ctx context.Context, out chan<- planned) error {
	changes := newSorter(r.out.scratch, byTime)
	defer changes.close()
	if err := r.diff(ctx, changes); err != nil {
		return err
	}
	src, err := changes.sorted()
	if err != nil {
		return err
	}
	p := &planner{opts: r.opts, kind: changeDump, seq: r.chg.seq0, from: r.chg.base.time, until: r.at,
		emit: func(pl planned) error { return send(ctx, out, pl) }}
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
		mtime: fromNanos(rec.Mtime), mode: fs.FileMode(rec.Mode), change: rec.Change, lastmod: fromNanos(rec.Lastmod)}
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
	have    bool
	state   *recWriter
	changes *sorter
	from    int64
	at      int64
}

func (r *run) diff(ctx context.Context, changes *sorter) error {
	f, err := os.CreateTemp(r.out.scratch, ".rsdump-walk-*.tmp")
	if err != nil {
		return err
	}
	r.chg.walk = f.Name()
	defer f.Close()
	d := &differ{r: r, base: r.chg.base.src, state: newRecWriter(f), changes: changes,
		from: nanos(r.chg.base.time), at: nanos(r.at)}
	if err := d.advance(); err != nil {
		return err
	}
	w := &walker{ctx: ctx, follow: r.opts.FollowSymlinks, visit: d.visit, warn: r.skip}
	if r.out.dir != "" {
		w.exclude, _ = filepath.EvalSymlinks(r.dir)
	}
	if err := w.walk(r.src); err != nil {
		return err
	}
	for d.have {
		if err := d.deleted(); err != nil {
			return err
		}
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
	return nil
}

func (d *differ) visit(it item) error {
	for d.have && comparePaths(d.cur.Rel, it.rel) < 0 {
		if err := d.deleted(); err != nil {
			return err
		}
	}
	if d.have && d.cur.Rel == it.rel {
		old := d.cur
		if err := d.advance(); err != nil {
			return err
		}
		return d.compare(old, it)
	}
	return d.changed(record{Rel: it.rel}, it, resourcesync.ChangeCreated)
}

func (d *differ) deleted() error {
	old := d.cur
	if err := d.advance(); err != nil {
		return err
	}
	d.r.chg.found[2]++
	old.Change, old.Lastmod, old.Mode = resourcesync.ChangeDeleted, d.at, 0
	return d.changes.add(old)
}

func (d *differ) compare(old record, it item) error {
	same := old.Size == it.size && old.Mtime == nanos(it.mtime)
	if d.r.opts.Checksum {
		var err error
		if same, err = sameContent(old, it); err != nil {
			return err
		}
	}
	if !same {
		return d.changed(old, it, resourcesync.ChangeUpdated)
	}
	return d.state.write(&record{Rel: it.rel, Size: it.size, Mtime: nanos(it.mtime), Hash: old.Hash, Type: old.Type})
}

// changed records a creation or update. The walk state keeps the
// baseline's version (none for a creation) with the change and the new
// length and mtime in Change, Seq and Lastmod; finishChanges puts the new
// version in the state once it is in a package, or keeps the old one when
// --skip-changed left the file out.
func (d *differ) changed(old record, it item, change string) error {
	if change == resourcesync.ChangeCreated {
		d.r.chg.found[0]++
	} else {
		d.r.chg.found[1]++
	}
	mt := nanos(it.mtime)
	lastmod := mt
	if lastmod <= d.from || lastmod > d.at {
		// The file's time is not in the interval the run covers (copied
		// with its old time, or changed during the run): the change is
		// placed at the run's time, when it was seen.
		lastmod = d.at
	}
	c := record{Rel: it.rel, Size: it.size, Mtime: mt, Mode: uint32(it.mode), Change: change, Lastmod: lastmod}
	if err := d.changes.add(c); err != nil {
		return err
	}
	return d.state.write(&record{Rel: it.rel, Size: old.Size, Mtime: old.Mtime, Hash: old.Hash, Type: old.Type, Change: change, Lastmod: mt, Seq: it.size})
}

// sameContent is --checksum's test: same length, and the same hash in
// every algorithm the baseline gives that rsdump knows.
func sameContent(old record, it item) (bool, error) {
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
	f, err := os.Open(it.abs)
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

// finishChanges writes the Change Dump document, listing the packages of
// earlier runs and this one's, and the new state. A run that found no
// change writes no document and leaves the state's time where it was.
func (r *run) finishChanges() error {
	defer os.Remove(r.chg.walk)
	until := r.chg.base.time
	if len(r.pkgs) > 0 {
		until = r.pkgs[len(r.pkgs)-1].Until
		urls := append(r.chg.prev, dumpEntries(r.opts, r.pkgs)...)
		md := resourcesync.MD{From: urls[0].MD.From}
		if err := r.list.commit(resourcesync.MD{From: md.From, Until: until}); err != nil {
			return err
		}
		if err := writeDump(r.opts, r.out, changeDump, md, urls); err != nil {
			return err
		}
	}
	return r.writeChangeState(until)
}

// listPrevious gives the Change List the entries of the packages the run
// continues, from their detached manifests in the output directory.
func (r *run) listPrevious(ctx context.Context) error {
	for _, u := range r.chg.prev {
		ln, ok := u.Link("contents")
		if !ok {
			return fmt.Errorf("%s: package %s links no manifest", ChangeDumpName, u.Loc)
		}
		if err := r.listManifest(PackageInfo{Manifest: resourcesync.BaseName(ln.Href)}); err != nil {
			return err
		}
	}
	return ctx.Err()
}

// writeChangeState merges the walk state with the hashes of the files
// this run packed, read back from its manifests.
func (r *run) writeChangeState(until time.Time) error {
	hashes := newSorter(r.out.scratch, byPath)
	defer hashes.close()
	for _, p := range r.pkgs {
		if err := r.manifestRecords(p.Manifest, hashes.add); err != nil {
			return err
		}
	}
	packed, err := hashes.sorted()
	if err != nil {
		return err
	}
	f, err := os.Open(r.chg.walk)
	if err != nil {
		return err
	}
	defer f.Close()
	sw, err := newStateWriter(r.out, stateHead{Version: 1, Kind: r.stateKind(), Time: until, BaseURL: r.opts.BaseURL})
	if err != nil {
		return err
	}
	// The Resource List describes the source now: unchanged files as the
	// baseline has them, changed ones as packed. Nothing is read again.
	list := newListWriter(r.opts, r.out, resourcesync.CapResourceList, ResourceListName)
	defer list.abort()
	add := func(rec record) error {
		if err := sw.add(rec); err != nil {
			return err
		}
		if len(r.pkgs) == 0 {
			return nil
		}
		return list.add(stateEntry(r.opts, rec))
	}
	if err := mergeState(newRecReader(r.chg.walk, f), &lastOnly{src: packed}, add); err != nil {
		sw.abort()
		return err
	}
	if len(r.pkgs) > 0 {
		completed := time.Now().UTC().Truncate(time.Millisecond)
		if r.pinned || completed.Before(until) {
			completed = until
		}
		if err := list.commit(resourcesync.MD{At: until, Completed: completed}); err != nil {
			sw.abort()
			return err
		}
		if err := r.writeCapabilities(); err != nil {
			sw.abort()
			return err
		}
	}
	// Last: until the state names the new time, a rerun after a kill has
	// the same baseline, and so the same journal.
	return sw.commit()
}

// stateEntry is a file of the state as a Resource List entry.
func stateEntry(o *Options, rec record) resourcesync.URL {
	u := resourcesync.URL{Loc: locFor(o.BaseURL, rec.Rel), Lastmod: fromNanos(rec.Mtime),
		MD: &resourcesync.MD{Hash: rec.Hash, Type: rec.Type}}
	if rec.Size >= 0 {
		u.MD.Length = resourcesync.Int64(rec.Size)
	}
	return u
}

func (r *run) stateKind() string {
	if len(r.pkgs) == 0 && r.chg.base.kind != "state" {
		return r.chg.base.kind
	}
	return r.kind.capability
}

// mergeState gives each walked file its record in the new state: as in
// the baseline when unchanged; the version packed when changed; the
// baseline's version (none for a creation) when it was left out.
func mergeState(walk, packed recSource, add func(record) error) error {
	p, pok, err := packed.next()
	if err != nil {
		return err
	}
	for {
		w, ok, err := walk.next()
		if err != nil || !ok {
			return err
		}
		for pok && comparePaths(p.Rel, w.Rel) < 0 {
			if p, pok, err = packed.next(); err != nil {
				return err
			}
		}
		if w.Change == "" {
			err = add(w)
		} else if pok && p.Rel == w.Rel {
			err = add(record{Rel: w.Rel, Size: w.Seq, Mtime: w.Lastmod, Hash: p.Hash, Type: p.Type})
		} else if w.Change == resourcesync.ChangeUpdated {
			err = add(record{Rel: w.Rel, Size: w.Size, Mtime: w.Mtime, Hash: w.Hash, Type: w.Type})
		}
		if err != nil {
			return err
		}
	}
}

// manifestRecords reads a detached manifest this run wrote, handing over
// each bitstream (not deletions) as a record.
func (r *run) manifestRecords(name string, add func(record) error) error {
	l := &resourcesync.Loader{Entry: func(d *resourcesync.Document, _ int, u resourcesync.URL) error {
		rec, err := r.recordOf(d, u)
		if err != nil || rec.Rel == "" {
			return err
		}
		return add(rec)
	}}
	return r.out.load(l, name)
}

// recordOf is a manifest entry as a state record; a deletion is the zero
// record.
func (r *run) recordOf(d *resourcesync.Document, u resourcesync.URL) (record, error) {
	if u.MD == nil || u.MD.Change == resourcesync.ChangeDeleted {
		return record{}, nil
	}
	rel, err := relOf(r.opts.BaseURL, u.Loc)
	if err != nil {
		return record{}, fmt.Errorf("%s: %w", d.Loc, err)
	}
	rec := record{Rel: rel, Mtime: nanos(u.Lastmod), Hash: u.MD.Hash, Type: u.MD.Type, Size: -1}
	if u.MD.Length != nil {
		rec.Size = *u.MD.Length
	}
	return rec, nil
}

// finishResources writes the Resource Dump document and the state: every
// file packed, read back from the manifests, which list them in walk
// order.
func (r *run) finishResources(completed time.Time) error {
	if err := r.finishDocuments(resourcesync.MD{At: r.at, Completed: completed}); err != nil {
		return err
	}
	sw, err := newStateWriter(r.out, stateHead{Version: 1, Kind: resourcesync.CapResourceDump, Time: r.at, BaseURL: r.opts.BaseURL})
	if err != nil {
		return err
	}
	for _, p := range r.pkgs {
		if err := r.manifestRecords(p.Manifest, sw.add); err != nil {
			sw.abort()
			return err
		}
	}
	return sw.commit()
}
