package pack

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/rsdump/rsdump/internal/unixnano"
	"github.com/rsdump/rsdump/layout"
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
	var publish func() error
	if len(r.pkgs) > 0 {
		until = r.pkgs[len(r.pkgs)-1].Until
		res.Until = until
		md := resourcesync.MD{From: c.base.time, Until: until}
		publish = func() error { return r.writeChanges(md) }
	}
	if err := r.writeChangeState(until, publish); err != nil {
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
	dump := newListWriter(r.opts, r.out, resourcesync.CapChangeDump, layout.ChangeDumpName)
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
// packed, as it recorded them while it published their packages, into
// the new Resource List and state, while publish (if any) writes the
// run's Change List and Change Dump: the merge writes scratch files only,
// and the list and state are put in place after those documents.
func (r *run) writeChangeState(until time.Time, publish func() error) error {
	published := make(chan error, 1)
	if publish == nil {
		published <- nil
	} else {
		go func() { published <- publish() }()
	}
	// The Resource List's times, in its parts' headers before its entries
	// (writeInPlace): completed, as a full pack's, is when the packages
	// are.
	md := resourcesync.MD{At: until, Completed: time.Now().UTC().Truncate(time.Millisecond)}
	if r.pinned || md.Completed.Before(until) {
		md.Completed = until
	}
	err := r.mergeChangeState(md)
	if perr := <-published; err == nil {
		err = perr
	}
	if err != nil {
		if r.chg.sw != nil {
			r.chg.sw.abort()
		}
		r.chg.list.abort()
		return err
	}
	return r.commitChangeState(md)
}

// mergeChangeState writes the new state and Resource List into scratch
// files (changeRun.sw and list).
func (r *run) mergeChangeState(md resourcesync.MD) error {
	packed, err := r.chg.packed.sorted()
	if err != nil {
		return err
	}
	f, err := os.Open(r.chg.walk)
	if err != nil {
		return err
	}
	defer f.Close()
	sw, err := r.newChangeState()
	if err != nil {
		return err
	}
	// The Resource List describes the source now: unchanged files as the
	// baseline has them (their lines in the baseline's list, when it
	// names one that is still there), changed ones as packed.
	list := newListWriter(r.opts, r.out, resourcesync.CapResourceList, layout.ResourceListName)
	if r.out.dir != "" {
		// Every file walked but a creation left out has an entry.
		list.writeInPlace(md, r.chg.walked-int64(r.chg.found[0]) > resourcesync.MaxEntries)
	}
	r.chg.sw, r.chg.list = sw, list
	var old *oldList
	if len(r.pkgs) > 0 {
		old = waitOldList(r.chg.old)
		defer old.close()
	}
	var walk walkSource = &walkLines{name: r.chg.walk, br: bufio.NewReaderSize(f, 1<<20)}
	if r.chg.sparse {
		// A delta takes only the files that changed, and the Resource
		// List's other entries are the lines of the list there: the runs
		// of kept files are copied from it whole. Otherwise the runs are
		// the baseline's files, read again.
		if _, ok := sw.(*deltaWriter); ok && (old != nil || len(r.pkgs) == 0) {
			if len(r.pkgs) == 0 {
				list = nil
			}
			return spliceState(r.opts, walk.(*walkLines), &lastOnly{src: packed}, sw, list, old)
		}
		s, _, err := openState(r.chg.base.name)
		if err != nil {
			return &BaselineError{Path: r.chg.base.name, Err: err}
		}
		defer s.close()
		walk = &expandedWalk{walk: walk.(*walkLines), base: s, name: r.chg.base.name}
	}
	feed := r.feedList(list, old)
	err = mergeState(walk, &lastOnly{src: packed}, sw, feed)
	if ferr := feed.close(); err == nil {
		err = ferr
	}
	return err
}

// newChangeState is where the run writes its new state: a batch added to
// the delta of the state it read, when that is the output's own and the
// delta stays within deltaLimit; otherwise the whole state.
func (r *run) newChangeState() (stateOut, error) {
	c := r.chg
	if c.takesDelta(r.opts) {
		st := c.base.state
		changed := int64(c.found[0] + c.found[1] + c.found[2] + c.touched)
		line := st.delta.base.Size / max(st.lines, 1)
		if st.delta.bytes+changed*line <= deltaLimit(st.delta.base.Size) {
			return &deltaWriter{out: r.out, d: st.delta}, nil
		}
	}
	return newStateSpool(r.out)
}

// takesDelta reports whether the run's state may be a batch added to
// the delta of the state it read: that state is the output's own.
func (c *changeRun) takesDelta(o *Options) bool {
	st := c.base.state
	return st != nil && st.delta.takes && o.Since == ""
}

// commitChangeState writes the Resource List mergeChangeState made, the
// Capability List, and last the state.
func (r *run) commitChangeState(md resourcesync.MD) error {
	sw, list := r.chg.sw, r.chg.list
	defer list.abort()
	var err error
	head := stateHead{Version: stateVersion, Kind: r.stateKind(), Time: md.At, BaseURL: r.opts.BaseURL}
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
	err = list.commit(md)
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
// encodes them, or copies their lines from the baseline's, on its own
// goroutine, beside the state's writing. Batches bound what is in flight.
type listFeed struct {
	batch *feedBatch
	send  chan *feedBatch
	free  chan *feedBatch // batches done with, to reuse
	err   chan error
}

// feedBatch holds files as records, or as the walk's lines of files kept
// as they were (keptLine), in buf.
type feedBatch struct {
	items []feedItem
	buf   []byte
}

// feedItem is a record, or buf[from:to].
type feedItem struct {
	rec      record
	from, to int
}

const feedBatchLen = 512

// feedList starts the Resource List's goroutine; a run that packed
// nothing writes no Resource List, and the feed drops the files. A file
// kept as it was gets its line in old when old has it.
func (r *run) feedList(list *listWriter, old *oldList) *listFeed {
	f := &listFeed{send: make(chan *feedBatch, 2), free: make(chan *feedBatch, 4), err: make(chan error, 1), batch: &feedBatch{}}
	go func() {
		var err error
		var md entryMD // reused: the list encodes an entry at once
		for b := range f.send {
			for _, it := range b.items {
				if err != nil || len(r.pkgs) == 0 {
					break
				}
				rec := it.rec
				if it.to > 0 {
					line := b.buf[it.from:it.to]
					rel, _, seq, _ := keptLine(line)
					if l := old.lineFor(seq, rel); l != nil {
						err = list.addLine(l)
						continue
					}
					if rec, err = parseRecord(string(line)); err != nil {
						break
					}
				}
				err = list.add(stateEntry(r.opts, rec, &md))
			}
			b.items, b.buf = b.items[:0], b.buf[:0]
			select {
			case f.free <- b:
			default:
			}
		}
		f.err <- err
	}()
	return f
}

func (f *listFeed) add(rec record) { f.put(feedItem{rec: rec}) }

// addLine hands over the walk's line of a file kept as it was.
func (f *listFeed) addLine(line []byte) {
	from := len(f.batch.buf)
	f.batch.buf = append(f.batch.buf, line...)
	f.put(feedItem{from: from, to: len(f.batch.buf)})
}

func (f *listFeed) put(it feedItem) {
	f.batch.items = append(f.batch.items, it)
	if len(f.batch.items) == feedBatchLen {
		f.send <- f.batch
		select {
		case f.batch = <-f.free:
		default:
			f.batch = &feedBatch{}
		}
	}
}

// close hands over the last batch and waits for the Resource List's
// goroutine: its first error, if any.
func (f *listFeed) close() error {
	if len(f.batch.items) > 0 {
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
	return resourcesync.URL{Loc: resourcesync.LocFor(o.BaseURL, rec.Rel), Lastmod: unixnano.Time(rec.Mtime), MD: &b.md}
}

func (r *run) stateKind() string {
	if len(r.pkgs) == 0 && r.chg.base.kind != "state" {
		return r.chg.base.kind
	}
	return r.kind.capability
}

// walkSource gives the walk's lines, each without its end, in walk
// order; pos is where the last came from, for messages.
type walkSource interface {
	next() ([]byte, bool, error)
	pos() string
}

// walkLines reads the walk's lines, each without its end.
type walkLines struct {
	name string
	br   *bufio.Reader
	n    int
}

func (w *walkLines) next() ([]byte, bool, error) {
	line, err := w.br.ReadSlice('\n')
	if err == io.EOF && len(line) == 0 {
		return nil, false, nil
	}
	w.n++
	if err != nil {
		return nil, false, fmt.Errorf("%s: line %d: %w", w.name, w.n, err)
	}
	return line[:len(line)-1], true, nil
}

func (w *walkLines) pos() string { return fmt.Sprintf("%s: line %d", w.name, w.n) }

// walkRun is the number of kept files a line of a sparse walk stands
// for (recWriter.writeRun), when it is such a line.
func walkRun(line []byte) (int64, bool) {
	if len(line) < 2 || line[0] != '\t' {
		return 0, false
	}
	n, ok := parseDigits(string(line[1:]))
	return int64(n), ok && n > 0 && n < 1<<62
}

// expandedWalk gives the lines of a sparse walk with its runs of kept
// files as a full walk has them, each file's line made from its record
// in the baseline, read again: the n-th file of the baseline is kept
// with seq n, as the walk's join wrote it (differ.compare).
type expandedWalk struct {
	walk *walkLines
	base recSource
	name string // the baseline's
	n    int64  // the baseline's files read
	run  int64  // kept files of the current run still to give
	buf  []byte
}

func (e *expandedWalk) pos() string { return e.walk.pos() }

func (e *expandedWalk) next() ([]byte, bool, error) {
	for e.run == 0 {
		line, ok, err := e.walk.next()
		if err != nil || !ok {
			return nil, false, err
		}
		if n, ok := walkRun(line); ok {
			e.run = n
			continue
		}
		w, err := parseRecord(string(line))
		if err != nil {
			return nil, false, fmt.Errorf("%s: %w", e.pos(), err)
		}
		if w.Change != resourcesync.ChangeCreated {
			// The file's version in the baseline, not kept.
			b, err := e.baseFile()
			if err != nil {
				return nil, false, err
			}
			if b.Rel != w.Rel {
				return nil, false, fmt.Errorf("%s: %s is the baseline's file %d on reading it again, not %s", e.pos(), b.Rel, e.n, w.Rel)
			}
		}
		return line, true, nil
	}
	b, err := e.baseFile()
	if err != nil {
		return nil, false, err
	}
	e.run--
	rec := record{Rel: b.Rel, Size: b.Size, Mtime: b.Mtime, Hash: b.Hash, Type: b.Type, Seq: e.n}
	e.buf = rec.appendTo(e.buf[:0])
	return e.buf[:len(e.buf)-1], true, nil
}

// baseFile is the baseline's next file.
func (e *expandedWalk) baseFile() (record, error) {
	b, ok, err := e.base.next()
	if err == nil && !ok {
		err = errors.New("fewer files than on the first reading")
	}
	if err != nil {
		return record{}, &BaselineError{Path: e.name, Err: err}
	}
	e.n++
	return b, nil
}

// packedCursor goes through the files the run packed, by path, beside
// the walk.
type packedCursor struct {
	src recSource
	p   record
	ok  bool
}

func newPackedCursor(src recSource) (*packedCursor, error) {
	c := &packedCursor{src: src}
	var err error
	c.p, c.ok, err = src.next()
	return c, err
}

// version is the record the new state has for w, a line of the walk of
// a file not kept as it was and not deleted: as the walk has it when
// --checksum found it touched, the version packed when changed, the
// baseline's when an update was left out; none (false) for a creation
// left out.
func (c *packedCursor) version(w record) (record, bool, error) {
	for c.ok && comparePaths(c.p.Rel, w.Rel) < 0 {
		var err error
		if c.p, c.ok, err = c.src.next(); err != nil {
			return record{}, false, err
		}
	}
	switch {
	case w.Change == "":
		return w, true, nil
	case c.ok && c.p.Rel == w.Rel:
		return record{Rel: w.Rel, Size: w.Seq, Mtime: w.Datetime, Hash: c.p.Hash, Type: c.p.Type}, true, nil
	case w.Change == resourcesync.ChangeUpdated:
		return record{Rel: w.Rel, Size: w.Size, Mtime: w.Mtime, Hash: w.Hash, Type: w.Type}, true, nil
	}
	return record{}, false, nil
}

// mergeState gives each walked file its record in the new state: as in
// the baseline when unchanged, its line copied; the version packed when
// changed; the baseline's version (none for a creation) when it was left
// out. It hands the same to the Resource List.
func mergeState(walk walkSource, packed recSource, sw stateOut, feed *listFeed) error {
	pc, err := newPackedCursor(packed)
	if err != nil {
		return err
	}
	for {
		line, ok, err := walk.next()
		if err != nil || !ok {
			return err
		}
		// A file --checksum found touched (seq 0: its mtime is not the
		// baseline's) goes as a record, which a delta takes too.
		if rel, state, seq, ok := keptLine(line); ok && seq > 0 {
			feed.addLine(line)
			if err := sw.addLine(rel, state); err != nil {
				return err
			}
			continue
		}
		w, err := parseRecord(string(line))
		if err != nil {
			return fmt.Errorf("%s: %w", walk.pos(), err)
		}
		if w.Change == resourcesync.ChangeDeleted {
			if err := sw.deleted(w.Rel); err != nil {
				return err
			}
			continue
		}
		rec, ok, err := pc.version(w)
		if err == nil && ok {
			feed.add(rec)
			err = sw.add(rec)
		}
		if err != nil {
			return err
		}
	}
}

// plainLoc reports whether rel is in its <loc> as it is, after the base
// URL: nothing in it is escaped, in the URL or in XML.
func plainLoc(rel string) bool {
	return !strings.ContainsAny(rel, `&<>"'`) && resourcesync.LocFor("", rel) == rel
}

// spliceState is mergeState for a sparse walk into a delta, which takes
// the files not kept alone: the Resource List (none when list is nil)
// gets the lines of old for the runs of kept files, copied, and the
// entries of the others, encoded. The baseline's file of each line of
// the walk but a creation's is the next of old, not copied.
func spliceState(o *Options, walk *walkLines, packed recSource, sw stateOut, list *listWriter, old *oldList) error {
	pc, err := newPackedCursor(packed)
	if err != nil {
		return err
	}
	var md entryMD
	for {
		line, ok, err := walk.next()
		if err != nil {
			return err
		}
		if !ok {
			break
		}
		if n, ok := walkRun(line); ok {
			for ; list != nil && n > 0; n-- {
				if !old.next() {
					return fmt.Errorf("%s: %s ends before the state's files", walk.pos(), layout.ResourceListName)
				}
				if err := list.addLine(old.line); err != nil {
					return err
				}
			}
			continue
		}
		w, err := parseRecord(string(line))
		if err != nil {
			return fmt.Errorf("%s: %w", walk.pos(), err)
		}
		// Its entry is checked when its <loc> is the base URL and the
		// path as it is, nothing escaped (in the URL nor in XML).
		if list != nil && w.Change != resourcesync.ChangeCreated &&
			(!old.next() || plainLoc(w.Rel) && !old.isEntry([]byte(w.Rel))) {
			return fmt.Errorf("%s: %s has not the entry of %s where the state has the file", walk.pos(), layout.ResourceListName, w.Rel)
		}
		if w.Change == resourcesync.ChangeDeleted {
			if err := sw.deleted(w.Rel); err != nil {
				return err
			}
			continue
		}
		rec, ok, err := pc.version(w)
		if err == nil && ok && list != nil {
			err = list.add(stateEntry(o, rec, &md))
		}
		if err == nil && ok {
			err = sw.add(rec)
		}
		if err != nil {
			return err
		}
	}
	if list != nil && old.next() {
		return fmt.Errorf("%s has more entries than the state has files", layout.ResourceListName)
	}
	return nil
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
	rec := record{Rel: rel, Mtime: unixnano.Of(u.Lastmod), Hash: u.MD.Hash, Type: u.MD.Type, Size: -1}
	if u.MD.Length != nil {
		rec.Size = *u.MD.Length
	}
	return rec, nil
}
