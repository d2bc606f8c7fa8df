package pack

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/rsdump/rsdump/internal/unixnano"
	"github.com/rsdump/rsdump/layout"
	"github.com/rsdump/rsdump/resourcesync"
)

// baseline is what the Destination already has, as a stream of files in
// walk order: the state file of an earlier pack, or a Resource Dump,
// Resource List or Change Dump (on top of the Resource Dump beside it).
type baseline struct {
	name  string       // the file given, for messages
	kind  string       // "state" or the document's capability
	time  time.Time    // the Destination is current up to this time
	key   string       // identity for the journal
	list  []listDoc    // a state's Resource List
	state *stateSource // a state's files, with its delta
	src   recSource
	close func()
}

// BaselineError is a baseline that cannot be read or is not one of the
// kinds pack --changes accepts.
type BaselineError struct {
	Path string
	Err  error
}

func (e *BaselineError) Error() string { return fmt.Sprintf("baseline %s: %v", e.Path, e.Err) }
func (e *BaselineError) Unwrap() error { return e.Err }

// openBaseline opens since, or the state file in dir when since is empty.
// A document may be a file or an http(s) URL; the state file is local.
func openBaseline(ctx context.Context, o *Options, dir, since string) (*baseline, error) {
	if since == "" {
		since = filepath.Join(dir, StateName)
		if _, err := os.Stat(since); err != nil {
			return nil, &BaselineError{Path: since, Err: &noEarlierPack{out: dir, err: err}}
		}
	}
	var key string
	if resourcesync.IsURL(since) {
		key = since // a document fetched through internal/httpc
	} else {
		fi, err := os.Stat(since)
		if err != nil {
			return nil, &BaselineError{Path: since, Err: err}
		}
		if !fi.Mode().IsRegular() {
			return nil, &BaselineError{Path: since, Err: errors.New("not a regular file")}
		}
		abs, _ := filepath.Abs(since)
		key = fmt.Sprintf("%s|%d|%d", abs, fi.Size(), fi.ModTime().UnixNano())
	}
	b, err := readBaseline(ctx, o, dir, since)
	if err != nil {
		var be *BaselineError
		if errors.As(err, &be) {
			return nil, err
		}
		return nil, &BaselineError{Path: since, Err: err}
	}
	b.name = since
	b.setKey(key)
	ahead, closeSrc := readRecsAhead(b.src), b.close
	b.src, b.close = ahead, func() { ahead.close(); closeSrc() }
	return b, nil
}

// setKey names the baseline for the journal by key, which names its file
// (and a state's by the part of its delta that counts too), its kind and
// its time.
func (b *baseline) setKey(key string) {
	if b.state != nil {
		key += fmt.Sprintf("|%d", b.state.delta.size)
	}
	b.key = fmt.Sprintf("%s|%s|%s", b.kind, key, resourcesync.FormatTime(b.time))
}

func readBaseline(ctx context.Context, o *Options, dir, since string) (*baseline, error) {
	if isStateFile(since) {
		// Read once, by the walk's join, before the run replaces
		// anything (findChanges): a bad line fails the run there.
		s, head, err := openState(since)
		if err != nil {
			return nil, err
		}
		if head.BaseURL != o.BaseURL {
			s.close()
			return nil, fmt.Errorf("written for the base URL %s, not %s: the Destination knows its files under that one", head.BaseURL, o.BaseURL)
		}
		return &baseline{kind: "state", time: head.Time, list: head.List, state: s, src: s, close: s.close}, nil
	}
	h, err := resourcesync.Peek(ctx, since)
	if err != nil {
		return nil, err
	}
	c := &collector{ctx: ctx, o: o, doc: since, sort: newSorter(dir, byPath)}
	defer func() {
		if c.sort != nil {
			c.sort.close()
		}
	}()
	switch h.MD.Capability {
	case resourcesync.CapResourceList, resourcesync.CapResourceDump:
		c.time = h.MD.At
		err = c.load(since)
	case resourcesync.CapChangeDump:
		err = c.changeDump(since, h)
	default:
		return nil, fmt.Errorf("capability %q is not a baseline: give a resourcedump, changedump, resourcelist or the %s pack leaves", h.MD.Capability, StateName)
	}
	if err != nil {
		return nil, err
	}
	if c.time.IsZero() {
		return nil, errors.New("the document gives no time (at, or until) the Destination is current to")
	}
	src, err := c.sort.sorted()
	if err != nil {
		return nil, err
	}
	s := c.sort
	c.sort = nil
	return &baseline{kind: h.MD.Capability, time: c.time, src: &lastOnly{src: src}, close: s.close}, nil
}

// collector reads baseline documents into a sorter.
type collector struct {
	ctx  context.Context
	o    *Options
	doc  string
	sort *sorter
	time time.Time
	seq  int64
}

// load reads a Resource List, Resource Dump or Change Dump and the
// manifests a dump's packages link to.
func (c *collector) load(loc string) error {
	l := &resourcesync.Loader{Entry: func(d *resourcesync.Document, n int, u resourcesync.URL) error {
		if d.Header.Kind == resourcesync.SitemapIndex {
			return nil
		}
		switch d.Header.MD.Capability {
		case resourcesync.CapResourceDump, resourcesync.CapChangeDump:
			return c.manifest(d, n, u)
		}
		return c.add(d.Loc, u)
	}}
	return l.Load(c.ctx, loc)
}

func (c *collector) manifest(d *resourcesync.Document, n int, u resourcesync.URL) error {
	ln, ok := u.Link("contents")
	if !ok {
		return fmt.Errorf("%s: package %d (%s) links no manifest (rel=\"contents\"), which a baseline needs", d.Loc, n, u.Loc)
	}
	if u.MD != nil && u.MD.Until.After(c.time) && d.Header.MD.Capability == resourcesync.CapChangeDump {
		c.time = u.MD.Until
	}
	l := &resourcesync.Loader{Entry: func(m *resourcesync.Document, _ int, e resourcesync.URL) error {
		return c.add(m.Loc, e)
	}}
	m, err := resourcesync.Resolve(c.ctx, d.Loc, ln.Href)
	if err != nil {
		return err
	}
	return l.Load(c.ctx, m)
}

func (c *collector) add(doc string, u resourcesync.URL) error {
	rel, err := relOf(c.o.BaseURL, u.Loc)
	if err != nil {
		return fmt.Errorf("%s: %w", doc, err)
	}
	r := record{Rel: rel, Mtime: unixnano.Of(u.Lastmod), Size: -1}
	if u.MD != nil {
		r.Hash, r.Type, r.Change = u.MD.Hash, u.MD.Type, u.MD.Change
		if u.MD.Length != nil {
			r.Size = *u.MD.Length
		}
	}
	c.seq++
	r.Seq = c.seq
	return c.sort.add(r)
}

// changeDump reads a Change Dump on top of the Resource Dump its changes
// start from, which must be beside it, as pack leaves them: the
// Destination has that dump and every change since.
func (c *collector) changeDump(loc string, h resourcesync.Header) error {
	base, err := resourcesync.Beside(loc, layout.DumpName)
	if err != nil {
		return err
	}
	bh, err := resourcesync.Peek(c.ctx, base)
	if err != nil {
		return fmt.Errorf("a Change Dump baseline needs the Resource Dump its changes start from beside it: %w", err)
	}
	if !bh.MD.At.Equal(h.MD.From) {
		return fmt.Errorf("its from %s is not the at %s of %s, so that dump is not the one its changes start from",
			resourcesync.FormatTime(h.MD.From), resourcesync.FormatTime(bh.MD.At), base)
	}
	if err := c.load(base); err != nil {
		return err
	}
	c.time = h.MD.From
	if err := c.load(loc); err != nil {
		return err
	}
	if !h.MD.Until.IsZero() {
		c.time = h.MD.Until
	}
	return nil
}

// relOf is the path under the base URL that loc names, its segments
// percent-decoded, as locFor wrote them.
func relOf(base, loc string) (string, error) {
	rest, ok := strings.CutPrefix(loc, base)
	if !ok || rest == "" {
		return "", fmt.Errorf("%s is not under the base URL %s (give the --base-url the baseline was written with)", loc, base)
	}
	segs := strings.Split(rest, "/")
	for i, s := range segs {
		d, err := url.PathUnescape(s)
		if err != nil || d == "" || strings.Contains(d, "/") {
			return "", fmt.Errorf("%s: segment %q cannot name a file", loc, s)
		}
		segs[i] = d
	}
	return strings.Join(segs, "/"), nil
}

// lastOnly reduces a stream sorted by path and then by the order of the
// changes to the last record of each file, leaving out files whose last
// change is a deletion.
type lastOnly struct {
	src  recSource
	head record
	have bool
	done bool
}

func (l *lastOnly) next() (record, bool, error) {
	for {
		if !l.have && !l.done {
			if err := l.read(); err != nil {
				return record{}, false, err
			}
		}
		if !l.have {
			return record{}, false, nil
		}
		cur := l.head
		l.have = false
		for {
			if err := l.read(); err != nil {
				return record{}, false, err
			}
			if !l.have || l.head.Rel != cur.Rel {
				break
			}
			cur, l.have = l.head, false
		}
		if cur.Change != resourcesync.ChangeDeleted {
			cur.Change, cur.Seq = "", 0
			return cur, true, nil
		}
	}
}

func (l *lastOnly) read() error {
	r, ok, err := l.src.next()
	if err != nil {
		return err
	}
	l.head, l.have, l.done = r, ok, !ok
	return nil
}
