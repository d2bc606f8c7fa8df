package pack

import (
	"fmt"
	"regexp"
	"strconv"
	"time"

	"github.com/rsdump/rsdump/finding"
	"github.com/rsdump/rsdump/layout"
	"github.com/rsdump/rsdump/resourcesync"
)

// changeIndex is changelist.xml or changedump.xml as a --changes run
// writes them: a Change List Index (§12.2) or Change Dump Index (§13.1),
// a <sitemapindex> naming one closed document per run (a few for a run
// past the sitemap limits), each with the from and until of its changes,
// in forward chronological order. A run writes its own documents and
// adds them to the index; it reads the index, one line per document, and
// never a document it names but the last (for the number of the last
// package), so that its cost does not grow with the runs before it.
type changeIndex struct {
	name       string // changelist.xml or changedump.xml
	capability string
	entries    []resourcesync.URL
	last       int  // the number of the last part named, by this index or one it replaced
	replaced   bool // an earlier index was there, and the run starts a new one
	// single is an older pack's single <urlset> document under the
	// index's name, every run's changes in one: entries[0] stands for it,
	// and adopt makes it the index's first part once.
	single bool
	seq    int // the number of the last package a single Change Dump names
}

// indexLimit is how many documents an index names at most: the sitemap
// limit. Past it the oldest are no longer named, and a Destination that
// far behind takes a new baseline. A variable for the tests.
var indexLimit = resourcesync.MaxEntries

// partName is the name of the index's n-th document:
// changelist-part00001.xml, as a list's parts are named.
func (x *changeIndex) partName(n int) string { return listPartName(x.name, n) }

var partNumRE = regexp.MustCompile(`-part(\d{5,})\.xml$`)

// partNum is the number in a part's name, 0 when it has none.
func partNum(loc string) int {
	m := partNumRE.FindStringSubmatch(resourcesync.BaseName(loc))
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// loadIndex reads the index in the output directory, if there is one,
// without the documents it names.
func (r *run) loadIndex(name, capability string) (*changeIndex, error) {
	x := &changeIndex{name: name, capability: capability}
	if ok, err := r.out.exists(name); !ok || err != nil {
		return x, err
	}
	var head resourcesync.Header
	var until time.Time
	n := 0
	l := &resourcesync.Loader{
		Document: func(d *resourcesync.Document) error {
			head = d.Header
			if c := d.Header.MD.Capability; c != capability {
				return fmt.Errorf("capability %q, not %q", c, capability)
			}
			return nil
		},
		Entry: func(d *resourcesync.Document, _ int, u resourcesync.URL) error {
			if d.Header.Kind == resourcesync.SitemapIndex {
				x.entries = append(x.entries, u)
				x.last = max(x.last, partNum(u.Loc))
				return nil
			}
			n++
			if t := entryEnd(u); t.After(until) {
				until = t
			}
			x.seq = max(x.seq, packageSeq(changeDump, resourcesync.BaseName(u.Loc)))
			return nil
		},
		NoParts: true,
	}
	if err := r.out.load(l, name); err != nil {
		return nil, fmt.Errorf("the %s to continue: %w", name, err)
	}
	if head.Kind == resourcesync.URLSet && n > 0 {
		if !head.MD.Until.IsZero() {
			until = head.MD.Until
		}
		x.single = true
		x.entries = []resourcesync.URL{{Loc: r.opts.DumpURL + name, MD: &resourcesync.MD{From: head.MD.From, Until: until}}}
	}
	return x, nil
}

// continueAt keeps the documents up to the one that ends at the
// baseline's time: those after it are this very run's, killed after it
// wrote the index but before the state, and are written again alike,
// under the same names. When none ends there, the run starts a new index,
// its parts numbered past the old ones, which are no longer named. It
// returns the last document kept: the last package the Change Dump names
// is in it.
func (x *changeIndex) continueAt(base time.Time) (last resourcesync.URL, ok bool) {
	end := -1
	for i, u := range x.entries {
		if u.MD != nil && u.MD.Until.Equal(base) {
			end = i
		}
	}
	if end < 0 {
		x.replaced, x.single, x.entries = len(x.entries) > 0, false, nil
		return resourcesync.URL{}, false
	}
	x.entries = x.entries[:end+1]
	x.last = 0
	for _, u := range x.entries {
		x.last = max(x.last, partNum(u.Loc))
	}
	return x.entries[end], true
}

// adopt copies an older pack's single document into the index's first
// part, entry by entry, and names it there in its place.
func (r *run) adopt(x *changeIndex) error {
	if !x.single {
		return nil
	}
	w := newListWriter(r.opts, r.out, x.capability, x.name)
	defer w.abort()
	l := &resourcesync.Loader{Entry: func(_ *resourcesync.Document, _ int, u resourcesync.URL) error { return w.add(u) }, NoParts: true}
	if err := r.out.load(l, x.name); err != nil {
		return err
	}
	md := *x.entries[0].MD
	x.entries, x.single = nil, false
	return w.commitInto(md, x)
}

// lastPackage is the number of the last package the document at loc, a
// part of the Change Dump Index, names.
func (r *run) lastPackage(loc string) (int, error) {
	seq := 0
	l := &resourcesync.Loader{Entry: func(_ *resourcesync.Document, _ int, u resourcesync.URL) error {
		seq = max(seq, packageSeq(changeDump, resourcesync.BaseName(u.Loc)))
		return nil
	}, NoParts: true}
	name := resourcesync.BaseName(loc)
	if err := r.out.load(l, name); err != nil {
		return 0, fmt.Errorf("the last part of %s: %w", layout.ChangeDumpName, err)
	}
	return seq, nil
}

// entryEnd is where an entry's changes end: a package's or a part's
// until, or a change's time.
func entryEnd(u resourcesync.URL) time.Time {
	if u.MD != nil && !u.MD.Until.IsZero() {
		return u.MD.Until
	}
	t, _ := u.ChangeTime()
	return t
}

// add names a part the run wrote.
func (x *changeIndex) add(o *Options, name string, md resourcesync.MD) {
	x.last = max(x.last, partNum(name))
	x.entries = append(x.entries, resourcesync.URL{Loc: o.DumpURL + name, MD: &resourcesync.MD{From: md.From, Until: md.Until}})
}

// commitIndex writes the index: from where its first document starts, and
// for a Change List Index until where its last ends (a Change Dump's
// document gives only from, as it always has). Past indexLimit the
// oldest documents are no longer named.
func (r *run) commitIndex(x *changeIndex) error {
	if n := len(x.entries) - indexLimit; n > 0 {
		r.events(finding.Note{Msg: fmt.Sprintf("%s names %d documents at most: the %d oldest, up to %s, are no longer named; a Destination further behind takes a new baseline",
			x.name, indexLimit, n, resourcesync.FormatTime(x.entries[n-1].MD.Until))})
		x.entries = x.entries[n:]
	}
	md := resourcesync.MD{Capability: x.capability, From: x.entries[0].MD.From}
	if x.capability == resourcesync.CapChangeList {
		md.Until = x.entries[len(x.entries)-1].MD.Until
	}
	h := resourcesync.Header{Kind: resourcesync.SitemapIndex, MD: md, Links: []resourcesync.Link{{Rel: "up", Href: r.opts.CapabilityList}}}
	return encodeFile(r.out, x.name, h, x.entries)
}
