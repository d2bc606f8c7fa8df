package pack

import (
	"fmt"
	"os"
	"time"

	"github.com/rsdump/rsdump/resourcesync"
)

// finish writes the run's Change List and Change Dump, each covering the
// run's interval and closed, adds them to the Change List Index and
// Change Dump Index, and writes the new state. A run that found no change
// writes no document and leaves the state's time where it was.
func (m *changesMode) finish(r *run, _ time.Time, res *Result) error {
	c := r.chg
	res.Created, res.Updated, res.Deleted = c.found[0], c.found[1], c.found[2]
	res.From, res.Until = c.base.time, c.base.time
	until := c.base.time
	if len(r.pkgs) > 0 {
		until = r.pkgs[len(r.pkgs)-1].Until
		res.Until = until
		if err := r.writeChanges(resourcesync.MD{From: c.base.time, Until: until}); err != nil {
			return err
		}
	}
	if err := r.writeChangeState(until); err != nil {
		return err
	}
	if len(r.pkgs) == 0 {
		if ok, _ := r.out.exists(r.kind.doc); !ok {
			res.Document = ""
		}
	}
	return nil
}

// writeChanges writes the run's Change List and Change Dump as the next
// parts of their indexes, then the indexes: the Change List first, as
// before, so that a Destination reading the Change Dump finds the list of
// its changes there too.
func (r *run) writeChanges(md resourcesync.MD) error {
	c := r.chg
	for _, x := range []*changeIndex{c.lists, c.dumps} {
		if err := r.adopt(x); err != nil {
			return fmt.Errorf("%s of an earlier rsdump, as the first part of the index: %w", x.name, err)
		}
	}
	if err := r.list.commitInto(md, c.lists); err != nil {
		return err
	}
	dump := newListWriter(r.opts, r.out, resourcesync.CapChangeDump, ChangeDumpName)
	defer dump.abort()
	for _, u := range dumpEntries(r.opts, r.pkgs) {
		if err := dump.add(u); err != nil {
			return err
		}
	}
	if err := dump.commitInto(md, c.dumps); err != nil {
		return err
	}
	if err := r.commitIndex(c.lists); err != nil {
		return err
	}
	return r.commitIndex(c.dumps)
}

// writeChangeState merges the walk state with the files this run
// packed, as it recorded them while it published their packages.
func (r *run) writeChangeState(until time.Time) error {
	packed, err := r.chg.packed.sorted()
	if err != nil {
		return err
	}
	f, err := os.Open(r.chg.walk)
	if err != nil {
		return err
	}
	defer f.Close()
	sw, err := newStateSpool(r.out)
	if err != nil {
		return err
	}
	// The Resource List describes the source now: unchanged files as the
	// baseline has them (their lines in the baseline's list, when it
	// names one that is still there), changed ones as packed.
	list := newListWriter(r.opts, r.out, resourcesync.CapResourceList, ResourceListName)
	defer list.abort()
	var old *oldList
	if len(r.pkgs) > 0 {
		old = waitOldList(r.chg.old)
		defer old.close()
	}
	feed := r.feedList(list, old)
	add := func(rec record) error {
		if err := sw.add(rec); err != nil {
			return err
		}
		return feed.add(rec)
	}
	err = mergeState(newRecReader(r.chg.walk, f), &lastOnly{src: packed}, add)
	if ferr := feed.close(); err == nil {
		err = ferr
	}
	if err != nil {
		sw.abort()
		return err
	}
	head := stateHead{Version: 1, Kind: r.stateKind(), Time: until, BaseURL: r.opts.BaseURL}
	// Last: until the state names the new time, a rerun after a kill has
	// the same baseline, and so the same journal. A run that wrote no
	// Resource List names none: the one there may not be its files'.
	if len(r.pkgs) == 0 {
		return sw.commitAs(head)
	}
	if head.List, err = list.bodies(); err != nil {
		sw.abort()
		return err
	}
	// The state is written and synced beside the list's documents, and
	// renamed into place after them.
	prepared := make(chan error, 1)
	go func() { prepared <- sw.prepare(head) }()
	completed := time.Now().UTC().Truncate(time.Millisecond)
	if r.pinned || completed.Before(until) {
		completed = until
	}
	err = list.commit(resourcesync.MD{At: until, Completed: completed})
	if err == nil {
		err = r.writeCapabilities()
	}
	if perr := <-prepared; err == nil {
		err = perr
	}
	if err != nil {
		sw.abort()
		return err
	}
	return sw.commit()
}

// listFeed hands the new state's files to the Resource List, which
// encodes them on its own goroutine, beside the state's writing: the XML
// is most of the work. Batches bound what is in flight.
type listFeed struct {
	batch []record
	send  chan []record
	err   chan error
}

const feedBatch = 512

// feedList starts the Resource List's goroutine; a run that packed
// nothing writes no Resource List, and the feed drops the files. A file
// whose Seq numbers its line in old, unchanged, gets that line.
func (r *run) feedList(list *listWriter, old *oldList) *listFeed {
	f := &listFeed{send: make(chan []record, 2), err: make(chan error, 1)}
	go func() {
		var err error
		var md entryMD // reused: the list encodes an entry at once
		for batch := range f.send {
			for i := range batch {
				if err != nil || len(r.pkgs) == 0 {
					continue
				}
				if line := old.lineFor(batch[i].Seq, batch[i].Rel); line != nil {
					err = list.addLine(line)
				} else {
					err = list.add(stateEntry(r.opts, batch[i], &md))
				}
			}
		}
		f.err <- err
	}()
	return f
}

func (f *listFeed) add(rec record) error {
	f.batch = append(f.batch, rec)
	if len(f.batch) == feedBatch {
		f.send <- f.batch
		f.batch = make([]record, 0, feedBatch)
	}
	return nil
}

// close hands over the last batch and waits for the Resource List's
// goroutine: its first error, if any.
func (f *listFeed) close() error {
	if len(f.batch) > 0 {
		f.send <- f.batch
	}
	close(f.send)
	return <-f.err
}

// entryMD is the <rs:md> of an entry being encoded.
type entryMD struct {
	md     resourcesync.MD
	length int64
}

// stateEntry is a file of the state as a Resource List entry, its
// <rs:md> in b.
func stateEntry(o *Options, rec record, b *entryMD) resourcesync.URL {
	b.md = resourcesync.MD{Hash: rec.Hash, Type: rec.Type}
	if rec.Size >= 0 {
		b.length = rec.Size
		b.md.Length = &b.length
	}
	return resourcesync.URL{Loc: resourcesync.LocFor(o.BaseURL, rec.Rel), Lastmod: fromNanos(rec.Mtime), MD: &b.md}
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
			err = add(record{Rel: w.Rel, Size: w.Seq, Mtime: w.Datetime, Hash: p.Hash, Type: p.Type})
		} else if w.Change == resourcesync.ChangeUpdated {
			err = add(record{Rel: w.Rel, Size: w.Size, Mtime: w.Mtime, Hash: w.Hash, Type: w.Type})
		}
		if err != nil {
			return err
		}
	}
}

// recordOf is a manifest entry as a state record; a deletion is the zero
// record.
func (r *run) recordOf(manifest string, u resourcesync.URL) (record, error) {
	if u.MD == nil || u.MD.Change == resourcesync.ChangeDeleted {
		return record{}, nil
	}
	rel, err := relOf(r.opts.BaseURL, u.Loc)
	if err != nil {
		return record{}, fmt.Errorf("%s: %w", manifest, err)
	}
	rec := record{Rel: rel, Mtime: nanos(u.Lastmod), Hash: u.MD.Hash, Type: u.MD.Type, Size: -1}
	if u.MD.Length != nil {
		rec.Size = *u.MD.Length
	}
	return rec, nil
}
