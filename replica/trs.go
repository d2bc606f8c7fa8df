package replica

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/rsdump/rsdump/deststate"
	"github.com/rsdump/rsdump/finding"
	"github.com/rsdump/rsdump/internal/entryspool"
	"github.com/rsdump/rsdump/internal/extsort"
	"github.com/rsdump/rsdump/resourcesync"
	"github.com/rsdump/rsdump/trs"
	"github.com/rsdump/rsdump/unpack"
)

// trackedResourceSet records a Tracked Resource Set given as the Source,
// and reads the ResourceSync documents its rel="resourcesync" Link names
// (a view rsdump serve --trs gives links its Capability List): their
// hashes check the resources the view names. A Link that leads nowhere
// leaves the view alone; one the view may not make refuses it.
func (d *discovery) trackedResourceSet(ctx context.Context, loc string, h http.Header, hops int) error {
	d.src.TRS = loc
	d.src.Route = append(d.src.Route, "tracked resource set")
	targets := linkTargets(h, loc, "resourcesync")
	if len(targets) == 0 {
		return nil
	}
	err := d.follow(ctx, targets[0], "link header", hops+1)
	var re *resourcesync.RefError
	if errors.As(err, &re) || ctx.Err() != nil {
		return err
	}
	return nil
}

// runTRS keeps the tree a copy of a Tracked Resource Set, as the
// specification's client does: with a sync point (the last event
// processed, in the state) it applies the Change Log's events after it;
// without one, or when the Change Log no longer holds it (truncated, or
// the server rolled back), it rebases: the Base (every page), then the
// events after the Base's cutoff event. Every resource lands through
// unpack.ApplyList, as a list's do, checked against the length and hash
// the Source's ResourceSync documents give when it has them. Members,
// events and entries are sorted and joined on disk (internal/extsort, in
// a directory of the tree's scratch removed after), so memory does not
// grow with the Base or the Change Log.
func (s *syncer) runTRS(ctx context.Context) error {
	c := &trs.Client{HTTP: s.opts.Client}
	set, err := c.Read(ctx, s.src.TRS)
	if err != nil {
		return err
	}
	// The sync point is recorded only once a run applied everything up
	// to it without an error: it, not the state's times (which a
	// resource without a hash to check keeps from moving), says what the
	// tree reflects.
	var point *deststate.TRSPoint
	if s.state.Sync != nil {
		point = s.state.Sync.TRS
	}
	switch {
	case point == nil:
		return s.rebase(ctx, c, set, "the destination has no copy of this Tracked Resource Set yet")
	case point.Event == trs.NilEvent && len(set.Log.Events) == 0 && set.Log.Previous == "":
		s.note("the Tracked Resource Set has no event yet")
		return nil
	case point.Event == trs.NilEvent:
		// The start of time is no event a Change Log can be searched for:
		// one truncated since could not be told from a whole one.
		return s.rebase(ctx, c, set, "its sync point is the start of time (rdf:nil), and the Change Log has events now")
	}
	dir, err := s.trsScratch()
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	evs, err := readEvents(ctx, c, set, point.Event, dir)
	if errors.Is(err, trs.ErrLost) {
		return s.rebase(ctx, c, set, fmt.Sprintf("its sync point, event %d (%s), is no longer in the Change Log (truncated, or the server rolled back)", point.Order, point.Event))
	}
	if err != nil {
		return err
	}
	defer evs.close()
	if evs.n == 0 {
		s.note("the Tracked Resource Set has no event after %s", point.Event)
		return nil
	}
	return s.applyEvents(ctx, dir, evs, nil, point, "incremental", set.URL, func(events, _ int) string {
		return fmt.Sprintf("%s after event %d", finding.Plural(events, "event"), point.Order)
	})
}

// trsScratch makes the directory of one run's sorts and lists, under the
// tree's scratch (which the next run empties, should this one be
// killed).
func (s *syncer) trsScratch() (string, error) {
	return os.MkdirTemp(s.tree.Scratch(), "trs-*")
}

// rebase takes the Base whole: its members as a Resource List, then, as
// one Change List, the removal of every file rsdump wrote that the Base
// does not hold (a file deleted while the tree was behind the Change
// Log's horizon) and the events after the cutoff.
func (s *syncer) rebase(ctx context.Context, c *trs.Client, set *trs.Set, why string) error {
	s.note("rebase from the Base %s: %s", set.Base, why)
	dir, err := s.trsScratch()
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	members := newLocSorter(dir, ".rsdump-trs-members-*.tmp")
	defer members.Close()
	cutoff, err := c.Base(ctx, set.Base, func(p trs.BasePage) error {
		for _, m := range p.Members {
			if err := members.Add(m); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	// The Change Log is read again after the Base: it must hold the
	// cutoff, which a Base newer than the log read before may name.
	if set, err = c.Read(ctx, set.URL); err != nil {
		return err
	}
	evs, err := readEvents(ctx, c, set, cutoff, dir)
	if err != nil {
		return fmt.Errorf("%s: the Base's cutoff event: %w", set.Base, err)
	}
	defer evs.close()
	// A member an event after the cutoff changes is left to the event:
	// the Base is an approximation the Change Log corrects, and a member
	// deleted since may be gone from the server.
	later := newLocSorter(dir, ".rsdump-trs-later-*.tmp")
	defer later.Close()
	if err := evs.each(func(e trs.Event) error { return later.Add(e.Changed) }); err != nil {
		return err
	}
	known, err := s.memberEntries(ctx, dir)
	if err != nil {
		return err
	}
	defer known.Close()
	list := &scratchList{dir: dir, name: "base", md: resourcesync.MD{Capability: resourcesync.CapResourceList, At: time.Now().UTC()}}
	defer list.abort()
	n, err := joinMembers(members, later, known, list.add)
	if err != nil {
		return err
	}
	known.Close()
	later.Close()
	doc, err := list.finish()
	if err != nil {
		return err
	}
	r, err := s.applyTRSList(ctx, "baseline", doc, set.Base, fmt.Sprintf("%s, %s", why, finding.Plural(n, "member")))
	if err != nil {
		return err
	}
	if r.Errors > 0 {
		return nil // the state did not move: the next run rebases again
	}
	at := &deststate.TRSPoint{Event: cutoff, Order: orderOf(set, cutoff)}
	gone := func(add func(resourcesync.URL) error) (int, error) { return s.notInBase(ctx, dir, members, add) }
	return s.applyEvents(ctx, dir, evs, gone, at, "incremental", set.URL, func(events, gone int) string {
		return fmt.Sprintf("%s after the cutoff event, %s no longer in the Base", finding.Plural(events, "event"), finding.Plural(gone, "file"))
	})
}

// joinMembers hands add, in <loc> order, each member once, but those an
// event after the cutoff changes (later): the Source's entry for it
// (known, the last one when it has several), else an entry of its <loc>
// alone. It returns the number of members.
func joinMembers(members, later *extsort.Sorter[string], known *extsort.Sorter[resourcesync.URL], add func(resourcesync.URL) error) (int, error) {
	ms, err := members.Sorted()
	if err != nil {
		return 0, err
	}
	l, err := sortedAhead(later)
	if err != nil {
		return 0, err
	}
	k, err := sortedAhead(known)
	if err != nil {
		return 0, err
	}
	n := 0
	var prev string
	for {
		m, ok, err := ms.Next()
		if err != nil || !ok {
			return n, err
		}
		if n > 0 && m == prev {
			continue
		}
		prev = m
		n++
		for l.ok && l.head < m {
			l.next()
		}
		for k.ok && k.head.Loc < m {
			k.next()
		}
		if err := errors.Join(l.err, k.err); err != nil {
			return n, err
		}
		if l.ok && l.head == m {
			continue
		}
		u := resourcesync.URL{Loc: m}
		for k.ok && k.head.Loc == m {
			u = k.head
			k.next()
		}
		if err := add(u); err != nil {
			return n, err
		}
	}
}

// orderOf is the order of the event uri in the newest segment, else 0.
func orderOf(set *trs.Set, uri string) int64 {
	for _, e := range set.Log.Events {
		if e.URI == uri {
			return e.Order
		}
	}
	return 0
}

// notInBase hands add the deletion of every file rsdump owns in the tree
// whose URI is not a member of the Base, as a Change List entry naming
// the version it wrote, and returns how many.
func (s *syncer) notInBase(ctx context.Context, dir string, members *extsort.Sorter[string], add func(resourcesync.URL) error) (int, error) {
	owned := extsort.New(dir, ".rsdump-trs-owned-*.tmp", trsSortRun, func(a, b *ownedFile) int { return strings.Compare(a.loc, b.loc) }, ownedCodec)
	defer owned.Close()
	_, err := s.tree.Owned(ctx, dir, func(r deststate.Record) error {
		return owned.Add(ownedFile{loc: resourcesync.LocFor(s.base, r.Path), hash: r.Hash, length: r.Length})
	})
	if err != nil {
		return 0, err
	}
	src, err := owned.Sorted()
	if err != nil {
		return 0, err
	}
	m, err := sortedAhead(members)
	if err != nil {
		return 0, err
	}
	n := 0
	for {
		o, ok, err := src.Next()
		if err != nil || !ok {
			return n, err
		}
		for m.ok && m.head < o.loc {
			m.next()
		}
		if m.err != nil {
			return n, m.err
		}
		if m.ok && m.head == o.loc {
			continue
		}
		n++
		if err := add(resourcesync.URL{Loc: o.loc, MD: &resourcesync.MD{Change: resourcesync.ChangeDeleted, Hash: o.hash, Length: resourcesync.Int64(o.length)}}); err != nil {
			return n, err
		}
	}
}

// applyEvents applies, as one Change List, the entries pre hands on (it
// returns their number) and then the events: each event's resource
// fetched (a deletion removes the file rsdump wrote), checked against the
// entry of the Source's Change List whose position is the event's order,
// when it names the same resource and change. Once all applied, the last
// event is the sync point (point, when there is none). why says what the
// list is, given the numbers of events and of pre's entries.
func (s *syncer) applyEvents(ctx context.Context, dir string, evs *eventLog, pre func(add func(resourcesync.URL) error) (int, error), point *deststate.TRSPoint, kind, label string, why func(events, pre int) string) error {
	now := time.Now().UTC()
	from := s.tree.State().Since()
	if from.IsZero() || from.After(now) {
		from = now
	}
	list := &scratchList{dir: dir, name: "changes", md: resourcesync.MD{Capability: resourcesync.CapChangeList, From: from, Until: now}}
	defer list.abort()
	add := func(u resourcesync.URL) error {
		md := *u.MD
		md.Datetime = now
		u.MD = &md
		return list.add(u)
	}
	var npre int
	if pre != nil {
		var err error
		if npre, err = pre(add); err != nil {
			return err
		}
	}
	last, nev, err := s.eventEntries(ctx, evs, add)
	if err != nil {
		return err
	}
	if npre+nev == 0 {
		s.trsPoint = point
		return nil
	}
	doc, err := list.finish()
	if err != nil {
		return err
	}
	r, err := s.applyTRSList(ctx, kind, doc, label, why(nev, npre))
	if err != nil {
		return err
	}
	if r.Errors > 0 {
		return nil // the state did not move: the next run applies them again
	}
	s.trsPoint = point
	if nev > 0 {
		s.trsPoint = &deststate.TRSPoint{Event: last.URI, Order: last.Order}
	}
	return nil
}

// eventEntries hands add the entry of each event, oldest first: the
// Source's Change List entry of the event, by its order (trs.Changes, the
// rule the server numbers them by, over the Change Lists the Capability
// List names), when it names the same resource and change, the entry
// whose hash checks what is fetched; else the event's resource and
// change alone. A Change List that cannot be read leaves the events from
// there unchecked, said in a note; one that names what it may not is an
// error. It returns the last event and the number of events. With no
// event (a rebase whose cutoff is the newest), no Change List is read.
func (s *syncer) eventEntries(ctx context.Context, evs *eventLog, add func(resourcesync.URL) error) (last trs.Event, n int, err error) {
	if evs.n == 0 {
		return last, 0, nil
	}
	src, err := evs.stream()
	if err != nil {
		return last, 0, err
	}
	e := newAhead(src)
	emit := func(ev trs.Event, u *resourcesync.URL) error {
		if u == nil {
			u = &resourcesync.URL{Loc: ev.Changed, MD: &resourcesync.MD{Change: changeOf(ev.Type)}}
		}
		last = ev
		n++
		return add(*u)
	}
	var fail error // of the list or the sort, not of the Change Lists
	_, changes, err := s.sourceDocs(ctx)
	if err == nil && len(changes) > 0 {
		err = trs.Changes(ctx, s.loader(), changes, func(order int64, _ time.Time, u resourcesync.URL) error {
			for e.ok && e.head.Order <= order {
				ev, match := e.head, (*resourcesync.URL)(nil)
				if ev.Order == order && ev.Changed == u.Loc && changeOf(ev.Type) == u.MD.Change {
					match = &u
				}
				if fail = emit(ev, match); fail != nil {
					return fail
				}
				e.next()
			}
			fail = e.err
			return fail
		})
	}
	var re *resourcesync.RefError
	switch {
	case fail != nil:
		return last, n, fail
	case errors.As(err, &re) || ctx.Err() != nil:
		return last, n, cmp.Or(err, ctx.Err())
	case err != nil:
		s.note("the Source's Change Lists cannot be read (%v): the events' resources are fetched unchecked", err)
	}
	for ; e.ok; e.next() {
		if err := emit(e.head, nil); err != nil {
			return last, n, err
		}
	}
	return last, n, e.err
}

// sourceDocs are the Resource Lists and Change Lists of the Source behind
// the view: those its Capability List names (trs.Documents, as the server
// finds them), else those discovery found.
func (s *syncer) sourceDocs(ctx context.Context) (lists, changes []string, err error) {
	if s.src.CapabilityList != "" {
		return trs.Documents(ctx, s.loader(), s.src.CapabilityList)
	}
	if d := s.src.Docs[resourcesync.CapResourceList]; d != "" {
		lists = []string{d}
	}
	if d := s.src.Docs[resourcesync.CapChangeList]; d != "" {
		changes = []string{d}
	}
	return lists, changes, nil
}

// loader reads the Source's documents, as sync reads them.
func (s *syncer) loader() resourcesync.Loader {
	return resourcesync.Loader{Open: resourcesync.Opener{Client: s.opts.Client}.Open, NotAfter: resourcesync.Horizon()}
}

func changeOf(eventType string) string {
	switch eventType {
	case trs.Creation:
		return resourcesync.ChangeCreated
	case trs.Deletion:
		return resourcesync.ChangeDeleted
	}
	return resourcesync.ChangeUpdated
}

// memberEntries sorts by <loc> the entries of the Source's Resource
// Lists, to be joined with the Base's members. A list that cannot be read
// gives no more (the members are then fetched unchecked, said in a
// note); one that names what it may not is an error.
func (s *syncer) memberEntries(ctx context.Context, dir string) (*extsort.Sorter[resourcesync.URL], error) {
	known := extsort.New(dir, ".rsdump-trs-entries-*.tmp", trsEntryRun, func(a, b *resourcesync.URL) int { return strings.Compare(a.Loc, b.Loc) }, entryspool.Codec[resourcesync.URL]())
	lists, _, err := s.sourceDocs(ctx)
	ld := s.loader()
	var fail error // of the sort, not of the lists
	ld.Entry = func(d *resourcesync.Document, _ int, u resourcesync.URL) error {
		if d.Header.Kind == resourcesync.URLSet {
			fail = known.Add(u)
		}
		return fail
	}
	for _, doc := range lists {
		if err != nil {
			break
		}
		err = ld.Load(ctx, doc)
	}
	var re *resourcesync.RefError
	switch {
	case fail != nil:
		err = fail
	case errors.As(err, &re) || ctx.Err() != nil:
		err = cmp.Or(err, ctx.Err())
	case err != nil:
		s.note("the Source's Resource Lists cannot be read (%v): the Base's members are fetched unchecked", err)
		return known, nil
	default:
		return known, nil
	}
	known.Close()
	return nil, err
}

// scratchList writes a list from the view into the run's scratch
// directory as its entries come: parts within the sitemap limits, then
// the list itself (the one part, renamed) or an index over them.
type scratchList struct {
	dir, name string
	md        resourcesync.MD
	f         *os.File
	enc       *resourcesync.Encoder
	parts     []resourcesync.URL // relative to dir
}

func (l *scratchList) add(u resourcesync.URL) error {
	if l.enc == nil {
		if err := l.startPart(); err != nil {
			return err
		}
	}
	err := l.enc.Encode(u)
	if errors.Is(err, resourcesync.ErrLimit) {
		if err = l.startPart(); err == nil {
			err = l.enc.Encode(u)
		}
	}
	if err != nil {
		return fmt.Errorf("%s: %w", u.Loc, err)
	}
	return nil
}

func (l *scratchList) startPart() error {
	if err := l.closePart(); err != nil {
		return err
	}
	name := fmt.Sprintf("%s-part%05d.xml", l.name, len(l.parts)+1)
	f, err := os.Create(filepath.Join(l.dir, name))
	if err != nil {
		return err
	}
	enc, err := resourcesync.NewEncoder(f, resourcesync.Header{Kind: resourcesync.URLSet, MD: l.md})
	if err != nil {
		f.Close()
		return err
	}
	l.f, l.enc = f, enc
	l.parts = append(l.parts, resourcesync.URL{Loc: name})
	return nil
}

func (l *scratchList) closePart() error {
	if l.enc == nil {
		return nil
	}
	err := l.enc.Close()
	if cerr := l.f.Close(); err == nil {
		err = cerr
	}
	l.f, l.enc = nil, nil
	return err
}

// finish writes the list and returns its file.
func (l *scratchList) finish() (string, error) {
	if err := l.closePart(); err != nil {
		return "", err
	}
	top := filepath.Join(l.dir, l.name+".xml")
	switch len(l.parts) {
	case 0:
		return top, encodeList(top, resourcesync.Header{Kind: resourcesync.URLSet, MD: l.md}, nil)
	case 1:
		return top, os.Rename(filepath.Join(l.dir, l.parts[0].Loc), top)
	}
	return top, encodeList(top, resourcesync.Header{Kind: resourcesync.SitemapIndex, MD: l.md}, l.parts)
}

// abort closes a part left open (its directory is removed after).
func (l *scratchList) abort() {
	if l.f != nil {
		l.f.Close()
	}
}

func encodeList(name string, h resourcesync.Header, entries []resourcesync.URL) error {
	f, err := os.Create(name)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := resourcesync.EncodeAll(f, h, entries); err != nil {
		return err
	}
	return f.Close()
}

// applyList applies the lists runTRS writes; a test of the consumer's
// own memory puts one there that only reads them.
var applyList = unpack.ApplyList

// applyTRSList applies a list written from the view, recorded as a step
// under label, the view's URL it stands for.
func (s *syncer) applyTRSList(ctx context.Context, kind, doc, label, why string) (*unpack.Result, error) {
	s.note("%s: %s (%s)", kind, label, why)
	o, err := s.unpackOptions()
	if err != nil {
		return nil, err
	}
	// Findings name what the user gave, the view, not the scratch list
	// written from it.
	scratch := filepath.Dir(doc)
	if events := o.Events; events != nil {
		o.Events = func(e finding.Event) {
			if f, ok := e.(finding.Finding); ok && strings.HasPrefix(f.Source, scratch) {
				f.Source = label
				e = f
			}
			events(e)
		}
	}
	r, err := applyList(ctx, doc, s.dir, o)
	if err != nil {
		return nil, err
	}
	s.res.Steps = append(s.res.Steps, Step{Kind: kind, Doc: label, Reason: why, Result: r})
	s.add(r)
	return r, nil
}
