package replica

import (
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
	"github.com/rsdump/rsdump/internal/plural"
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
// the Source's ResourceSync documents give when it has them.
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
	evs, err := c.Since(ctx, set, point.Event)
	if errors.Is(err, trs.ErrLost) {
		return s.rebase(ctx, c, set, fmt.Sprintf("its sync point, event %d (%s), is no longer in the Change Log (truncated, or the server rolled back)", point.Order, point.Event))
	}
	if err != nil {
		return err
	}
	if len(evs) == 0 {
		s.note("the Tracked Resource Set has no event after %s", point.Event)
		return nil
	}
	return s.applyEvents(ctx, evs, nil, point, "incremental", set.URL, fmt.Sprintf("%s after event %d", plural.Count(len(evs), "event"), point.Order))
}

// rebase takes the Base whole: its members as a Resource List, then, as
// one Change List, the removal of every file rsdump wrote that the Base
// does not hold (a file deleted while the tree was behind the Change
// Log's horizon) and the events after the cutoff.
func (s *syncer) rebase(ctx context.Context, c *trs.Client, set *trs.Set, why string) error {
	s.note("rebase from the Base %s: %s", set.Base, why)
	var members []string
	seen := map[string]bool{}
	cutoff, err := c.Base(ctx, set.Base, func(p trs.BasePage) error {
		for _, m := range p.Members {
			if !seen[m] {
				seen[m] = true
				members = append(members, m)
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
	evs, err := c.Since(ctx, set, cutoff)
	if err != nil {
		return fmt.Errorf("%s: the Base's cutoff event: %w", set.Base, err)
	}
	known, err := s.memberEntries(ctx, seen)
	if err != nil {
		return err
	}
	// A member an event after the cutoff changes is left to the event:
	// the Base is an approximation the Change Log corrects, and a member
	// deleted since may be gone from the server.
	later := map[string]bool{}
	for _, e := range evs {
		later[e.Changed] = true
	}
	now := time.Now().UTC()
	entries := make([]resourcesync.URL, 0, len(members))
	for _, m := range members {
		if later[m] {
			continue
		}
		if u, ok := known[m]; ok {
			entries = append(entries, u)
		} else {
			entries = append(entries, resourcesync.URL{Loc: m})
		}
	}
	doc, err := s.writeList(resourcesync.MD{Capability: resourcesync.CapResourceList, At: now}, entries)
	if err != nil {
		return err
	}
	defer os.RemoveAll(filepath.Dir(doc))
	r, err := s.applyTRSList(ctx, "baseline", doc, set.Base, fmt.Sprintf("%s, %s", why, plural.Count(len(members), "member")))
	if err != nil {
		return err
	}
	gone, err := s.notInBase(ctx, seen)
	if err != nil {
		return err
	}
	if r.Errors > 0 {
		return nil // the state did not move: the next run rebases again
	}
	at := &deststate.TRSPoint{Event: cutoff, Order: orderOf(set, cutoff)}
	if len(evs) == 0 && len(gone) == 0 {
		s.trsPoint = at
		return nil
	}
	return s.applyEvents(ctx, evs, gone, at, "incremental", set.URL, fmt.Sprintf("%s after the cutoff event, %s no longer in the Base", plural.Count(len(evs), "event"), plural.Count(len(gone), "file")))
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

// notInBase is the deletion of every file rsdump owns in the tree whose
// URI is not a member of the Base, as a Change List entry naming the
// version it wrote.
func (s *syncer) notInBase(ctx context.Context, members map[string]bool) ([]resourcesync.URL, error) {
	var gone []resourcesync.URL
	_, err := s.tree.Owned(ctx, s.tree.Scratch(), func(r deststate.Record) error {
		loc := resourcesync.LocFor(s.base, r.Path)
		if !members[loc] {
			gone = append(gone, resourcesync.URL{Loc: loc, MD: &resourcesync.MD{Change: resourcesync.ChangeDeleted, Hash: r.Hash, Length: resourcesync.Int64(r.Length)}})
		}
		return nil
	})
	return gone, err
}

// applyEvents applies pre and then the events as one Change List: each
// event's resource fetched (a deletion removes the file rsdump wrote),
// checked against the entry of the Source's Change List whose position is
// the event's order, when it names the same resource and change. Once
// all applied, the last event is the sync point (point, when there is
// none).
func (s *syncer) applyEvents(ctx context.Context, evs []trs.Event, pre []resourcesync.URL, point *deststate.TRSPoint, kind, label, why string) error {
	want := map[int64]trs.Event{}
	for _, e := range evs {
		want[e.Order] = e
	}
	known, err := s.eventEntries(ctx, want)
	if err != nil {
		return err
	}
	now := time.Now().UTC()
	entries := pre
	for i := range entries {
		entries[i].MD.Datetime = now
	}
	for _, e := range evs {
		u, ok := known[e.Order]
		if !ok {
			u = resourcesync.URL{Loc: e.Changed, MD: &resourcesync.MD{Change: changeOf(e.Type)}}
		}
		md := *u.MD
		md.Datetime = now
		u.MD = &md
		entries = append(entries, u)
	}
	from := s.tree.State().Since()
	if from.IsZero() || from.After(now) {
		from = now
	}
	doc, err := s.writeList(resourcesync.MD{Capability: resourcesync.CapChangeList, From: from, Until: now}, entries)
	if err != nil {
		return err
	}
	defer os.RemoveAll(filepath.Dir(doc))
	r, err := s.applyTRSList(ctx, kind, doc, label, why)
	if err != nil {
		return err
	}
	if r.Errors > 0 {
		return nil // the state did not move: the next run applies them again
	}
	s.trsPoint = point
	if len(evs) > 0 {
		last := evs[len(evs)-1]
		s.trsPoint = &deststate.TRSPoint{Event: last.URI, Order: last.Order}
	}
	return nil
}

// eventEntries finds the Source's Change List entry of each event wanted,
// by its order (trs.Changes, the rule the server numbers them by, over
// the Change Lists the Capability List names), when it names the same
// resource and change: the entry whose hash checks what is fetched. A
// Change List that cannot be read leaves the events unchecked, said in a
// note; one that names what it may not is an error.
func (s *syncer) eventEntries(ctx context.Context, want map[int64]trs.Event) (map[int64]resourcesync.URL, error) {
	known := map[int64]resourcesync.URL{}
	_, changes, err := s.sourceDocs(ctx)
	if err == nil && len(changes) > 0 {
		err = trs.Changes(ctx, s.loader(), changes, func(n int64, _ time.Time, u resourcesync.URL) error {
			if e, ok := want[n]; ok && e.Changed == u.Loc && changeOf(e.Type) == u.MD.Change {
				known[n] = u
			}
			return nil
		})
	}
	var re *resourcesync.RefError
	switch {
	case errors.As(err, &re) || ctx.Err() != nil:
		return nil, err
	case err != nil:
		s.note("the Source's Change Lists cannot be read (%v): the events' resources are fetched unchecked", err)
	}
	return known, nil
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

// memberEntries are the entries of the Source's Resource Lists whose
// <loc> is a member of the Base, by <loc>. A list that cannot be read
// gives none (the members are then fetched unchecked, said in a note);
// one that names what it may not is an error.
func (s *syncer) memberEntries(ctx context.Context, members map[string]bool) (map[string]resourcesync.URL, error) {
	out := map[string]resourcesync.URL{}
	lists, _, err := s.sourceDocs(ctx)
	ld := s.loader()
	ld.Entry = func(d *resourcesync.Document, _ int, u resourcesync.URL) error {
		if d.Header.Kind == resourcesync.URLSet && members[u.Loc] {
			out[u.Loc] = u
		}
		return nil
	}
	for _, doc := range lists {
		if err != nil {
			break
		}
		err = ld.Load(ctx, doc)
	}
	var re *resourcesync.RefError
	switch {
	case errors.As(err, &re) || ctx.Err() != nil:
		return nil, err
	case err != nil:
		s.note("the Source's Resource Lists cannot be read (%v): the Base's members are fetched unchecked", err)
	}
	return out, nil
}

// writeList writes entries as a list of header md in a directory of its
// own under the tree's scratch: one document, or past the sitemap limit
// an index over parts beside it. It returns the top document.
func (s *syncer) writeList(md resourcesync.MD, entries []resourcesync.URL) (string, error) {
	dir, err := os.MkdirTemp(s.tree.Scratch(), "trs-*")
	if err != nil {
		return "", err
	}
	top := filepath.Join(dir, "list.xml")
	if len(entries) <= resourcesync.MaxEntries {
		return top, encodeList(top, resourcesync.Header{Kind: resourcesync.URLSet, MD: md}, entries)
	}
	var parts []resourcesync.URL
	for i := 0; i < len(entries); i += resourcesync.MaxEntries {
		name := fmt.Sprintf("list-part%05d.xml", len(parts)+1)
		end := min(i+resourcesync.MaxEntries, len(entries))
		if err := encodeList(filepath.Join(dir, name), resourcesync.Header{Kind: resourcesync.URLSet, MD: md}, entries[i:end]); err != nil {
			return "", err
		}
		parts = append(parts, resourcesync.URL{Loc: name})
	}
	return top, encodeList(top, resourcesync.Header{Kind: resourcesync.SitemapIndex, MD: md}, parts)
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
	r, err := unpack.ApplyList(ctx, doc, s.dir, o)
	if err != nil {
		return nil, err
	}
	s.res.Steps = append(s.res.Steps, Step{Kind: kind, Doc: label, Reason: why, Result: r})
	s.add(r)
	return r, nil
}
