package trs

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/rsdump/rsdump/resourcesync"
)

// CapabilityListName is the document a view starts from: every other
// document is found through it, as a Destination finds them.
const CapabilityListName = "capabilitylist.xml"

// OpenFunc opens a document of the directory by name, a regular file.
type OpenFunc func(name string) (*os.File, os.FileInfo, error)

// view is what a Tracked Resource Set of the directory is, as of one
// version of its documents: enough to answer any request without reading
// the Change Log twice for it.
type view struct {
	key     string   // the documents' names, sizes and times: a new key is a new view
	lists   []string // the Resource List documents (parts of an index in its order)
	changes []string // the Change List documents named by the Capability List, in its order
	at      time.Time
	events  int64 // events in the Change Log; orders are 1..events
	cutoff  event // the base cutoff event; order 0 is rdf:nil
	horizon int64 // the oldest order still in the Change Log (1 when nothing was truncated)
	version string
	hasBase bool
	// spool holds the events, so that a request for a segment does not
	// read the Change Log again.
	spool *spool
}

// event is one Change Event: the order-th entry of the Source's Change
// Lists, counting across their parts.
type event struct {
	order   int64
	kind    string // Creation, Modification or Deletion
	changed string // the resource's URI, its <loc>
	when    time.Time
	change  string
}

// uri is the Change Event's URI: a URN of the time of the change, its
// order and the change itself, so that an event a Source's rewritten
// history gives the same order gets another URI (the specification asks
// for URIs unique even when orders are reused after a rollback).
func (e event) uri() string {
	if e.order == 0 {
		return rdfNil
	}
	sum := sha256.Sum256([]byte(e.change + " " + e.changed))
	when := "unknown"
	if !e.when.IsZero() {
		when = resourcesync.FormatTime(e.when)
	}
	return fmt.Sprintf("urn:rsdump:trs:%s:%d:%s", when, e.order, hex.EncodeToString(sum[:6]))
}

var kinds = map[string]string{
	resourcesync.ChangeCreated: Creation,
	resourcesync.ChangeUpdated: Modification,
	resourcesync.ChangeDeleted: Deletion,
}

// source reads the directory's documents.
type source struct {
	open    OpenFunc
	keep    int64
	segment int64 // events a segment
}

// loader is the project's document loader over the directory: names are
// resolved beside the document that names them (resourcesync.Resolve of
// a local document), and only regular files are read.
func (s *source) loader() resourcesync.Loader {
	return resourcesync.Loader{Open: func(_ context.Context, name string) (io.ReadCloser, error) {
		f, _, err := s.open(name)
		if err != nil {
			return nil, err
		}
		return f, nil
	}}
}

// fingerprint names the Capability List and every document it names,
// with their sizes and times, so that a view is computed again when pack
// rewrote one. A document that is missing counts as such.
func (s *source) fingerprint(ctx context.Context) (key string, lists, changes []string, err error) {
	var b strings.Builder
	stamp := func(name string) {
		f, fi, err := s.open(name)
		if err != nil {
			fmt.Fprintf(&b, "%s:missing;", name)
			return
		}
		f.Close()
		fmt.Fprintf(&b, "%s:%d:%d;", name, fi.Size(), fi.ModTime().UnixNano())
	}
	stamp(CapabilityListName)
	if lists, changes, err = Documents(ctx, s.loader(), CapabilityListName); err != nil {
		return "", nil, nil, err
	}
	for _, name := range append(append([]string{}, lists...), changes...) {
		stamp(name)
	}
	return b.String(), lists, changes, nil
}

// Documents reads the Capability List at loc through ld and returns the
// Resource Lists and Change Lists it names, in its order, each resolved
// as resourcesync.Resolve resolves a document's reference: what a
// Tracked Resource Set of the Source is made of.
func Documents(ctx context.Context, ld resourcesync.Loader, loc string) (lists, changes []string, err error) {
	ld.NoParts = true
	ld.Document = func(d *resourcesync.Document) error {
		if c := d.Header.MD.Capability; c != resourcesync.CapCapabilityList {
			return fmt.Errorf("%s: capability %q, not a Capability List", d.Loc, c)
		}
		return nil
	}
	ld.Entry = func(d *resourcesync.Document, _ int, u resourcesync.URL) error {
		if u.MD == nil || u.MD.Capability != resourcesync.CapResourceList && u.MD.Capability != resourcesync.CapChangeList {
			return nil
		}
		name, err := resourcesync.Resolve(ctx, d.Loc, u.Loc)
		if err != nil {
			return err
		}
		if u.MD.Capability == resourcesync.CapResourceList {
			lists = append(lists, name)
		} else {
			changes = append(changes, name)
		}
		return nil
	}
	if err := ld.Load(ctx, loc); err != nil {
		return nil, nil, err
	}
	return lists, changes, nil
}

// compute reads the documents of a view: the Resource List's parts and
// time, the Change Log's length and its cutoff event.
func (s *source) compute(ctx context.Context, key string, lists, changes []string) (*view, error) {
	v := &view{key: key, horizon: 1}
	var err error
	if v.lists, v.at, err = s.parts(ctx, lists); err != nil {
		return nil, err
	}
	v.hasBase = len(lists) > 0
	v.changes = changes
	if v.spool, err = newSpool(); err != nil {
		return nil, err
	}
	err = s.events(ctx, changes, func(e event) error {
		v.events = e.order
		if v.hasBase && !e.when.After(v.at) {
			v.cutoff = e
		}
		return v.spool.add(e, (e.order-1)%s.segment == 0)
	})
	if err == nil {
		err = v.spool.finish()
	}
	if err != nil {
		v.spool.retire()
		return nil, err
	}
	if !v.hasBase {
		v.cutoff = event{} // the empty Base at the start of time
	}
	// Truncation keeps the newest keep events, and never the cutoff
	// event or anything after it: the specification lets a Server drop
	// only events older than the base cutoff event, and none when the
	// cutoff is rdf:nil.
	if s.keep > 0 && v.cutoff.order > 0 {
		v.horizon = max(1, min(v.events-s.keep+1, v.cutoff.order))
	}
	// The Base's pages are named by a version of what they enumerate and
	// where the Change Log begins: when either moves, the Base is a new
	// one with new page URIs, and a client half-way through the old one
	// is told so (404) rather than mixing the two.
	sum := sha256.Sum256(fmt.Appendf(nil, "%s|%d|%s", key, v.horizon, v.cutoff.uri()))
	v.version = hex.EncodeToString(sum[:6])
	return v, nil
}

// parts lists the documents of entries the Resource Lists are (an
// index's parts, in order) and the time of the first list.
func (s *source) parts(ctx context.Context, lists []string) (parts []string, at time.Time, err error) {
	for _, top := range lists {
		ld := s.loader()
		ld.NoParts = true
		ld.Document = func(d *resourcesync.Document) error {
			if c := d.Header.MD.Capability; c != resourcesync.CapResourceList {
				return fmt.Errorf("%s: capability %q, not a Resource List", d.Loc, c)
			}
			if at.IsZero() || d.Header.MD.At.Before(at) {
				at = d.Header.MD.At // the oldest: the Base reflects no change after it
			}
			if d.Header.Kind == resourcesync.URLSet {
				parts = append(parts, d.Loc)
			}
			return nil
		}
		ld.Entry = func(d *resourcesync.Document, _ int, u resourcesync.URL) error {
			if d.Header.Kind != resourcesync.SitemapIndex {
				return errStop
			}
			part, err := resourcesync.Resolve(ctx, d.Loc, u.Loc)
			if err != nil {
				return err
			}
			parts = append(parts, part)
			return nil
		}
		if err := ld.Load(ctx, top); err != nil && !errors.Is(err, errStop) {
			return nil, at, err
		}
	}
	return parts, at, nil
}

var errStop = errors.New("stop")

// events hands every Change Event to fn, oldest first (Changes).
func (s *source) events(ctx context.Context, changes []string, fn func(event) error) error {
	return Changes(ctx, s.loader(), changes, func(order int64, when time.Time, u resourcesync.URL) error {
		return fn(event{order: order, kind: kinds[u.MD.Change], changed: u.Loc, when: when, change: u.MD.Change})
	})
}

// Changes hands fn every entry of the Change Lists changes (read through
// ld, an index followed part by part) with its trs:order: its position
// across them, counting from 1, and its time of change. This is the one
// rule that makes an entry an event, the server's and the client's, which
// finds an event's entry (and its hash) by its order. The times must not
// go back (trs:order increases with time): an entry whose time is older
// than the one before is an error naming it, as is one with no change.
func Changes(ctx context.Context, ld resourcesync.Loader, changes []string, fn func(order int64, when time.Time, u resourcesync.URL) error) error {
	var n int64
	var last time.Time
	for _, top := range changes {
		ld.Document = func(d *resourcesync.Document) error {
			if c := d.Header.MD.Capability; c != resourcesync.CapChangeList {
				return fmt.Errorf("%s: capability %q, not a Change List", d.Loc, c)
			}
			return nil
		}
		ld.Entry = func(d *resourcesync.Document, i int, u resourcesync.URL) error {
			if d.Header.Kind != resourcesync.URLSet {
				return nil
			}
			if u.MD == nil || kinds[u.MD.Change] == "" {
				return fmt.Errorf("%s: entry %d (%s): no change attribute a Change Event can be made of", d.Loc, i, u.Loc)
			}
			when, ok := u.ChangeTime()
			if !ok {
				when = last // a 1.0 deletion of unknown time: at the latest time seen
			}
			if when.Before(last) {
				return fmt.Errorf("%s: entry %d (%s): its change at %s is older than the one before it (%s): the Change Log's order would not follow time",
					d.Loc, i, u.Loc, resourcesync.FormatTime(when), resourcesync.FormatTime(last))
			}
			last = when
			n++
			return fn(n, when, u)
		}
		if err := ld.Load(ctx, top); err != nil {
			return err
		}
	}
	return nil
}

// members hands fn the <loc>s of entries from+1 to from+n of a part (a
// page and one more, to tell whether the part goes on).
func (s *source) members(ctx context.Context, part string, from, n int, fn func(loc string)) error {
	ld := s.loader()
	ld.NoParts = true
	ld.Entry = func(d *resourcesync.Document, i int, u resourcesync.URL) error {
		switch {
		case i <= from:
			return nil
		case i > from+n:
			return errStop
		}
		fn(u.Loc)
		return nil
	}
	if err := ld.Load(ctx, part); err != nil && !errors.Is(err, errStop) {
		return err
	}
	return nil
}
