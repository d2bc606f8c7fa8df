package notify

import (
	"bytes"
	"context"
	"errors"
	"io"
	"sort"
	"time"

	"github.com/rsdump/rsdump/layout"
	"github.com/rsdump/rsdump/resourcesync"
)

// MaxEntries bounds the entries of one change notification: a run with
// more changes sends several, over consecutive intervals, each well under
// a hub's limit on a notification's size (4 MiB for rsdump's hub).
const MaxEntries = 5000

// chunkSize is MaxEntries; tests make it small.
var chunkSize = MaxEntries

// Framework is the framework notification for the documents a run
// created or changed, or nil when there are none. An index is not told of
// (§3: framework notifications are never sent at the index level); a
// document under one links it with rel="index".
func Framework(res *layout.Published) ([]byte, error) {
	var urls []resourcesync.URL
	for _, d := range res.Documents {
		if d.IsIndex {
			continue
		}
		u := resourcesync.URL{Loc: d.Loc, MD: &resourcesync.MD{Change: d.Change, Capability: d.Capability, Datetime: d.Datetime}}
		if d.Index != "" {
			u.Links = []resourcesync.Link{{Rel: "index", Href: d.Index}}
		}
		urls = append(urls, u)
	}
	if len(urls) == 0 {
		return nil, nil
	}
	return encode(res.CapabilityList, resourcesync.MD{Capability: resourcesync.CapFrameworkNotification}, urls)
}

// Changes calls send with the change notifications of a --changes run:
// the entries of the Change List documents it wrote whose time of change
// is in the run's interval, (res.From, res.Until], in order, at most
// MaxEntries in each notification. The notifications' intervals are
// consecutive: each starts where the one before ends, the first at the
// run's from and the last ends at its until, so that a Destination that
// misses one sees the gap.
func Changes(ctx context.Context, open resourcesync.OpenFunc, res *layout.Published, send func(from, until time.Time, body []byte) error) error {
	if res.From.IsZero() || res.Until.IsZero() {
		return nil
	}
	var lists []string
	for _, d := range res.Documents {
		if d.Capability == resourcesync.CapChangeList && !d.IsIndex {
			lists = append(lists, d.File)
		}
	}
	sort.Strings(lists) // parts are numbered in order
	c := &chunker{res: res, send: send, from: res.From}
	for _, file := range lists {
		if err := c.read(ctx, open, file); err != nil {
			return err
		}
	}
	return c.flush(res.Until)
}

// chunker gathers entries into notifications of at most MaxEntries.
type chunker struct {
	res     *layout.Published
	send    func(from, until time.Time, body []byte) error
	from    time.Time
	pending []resourcesync.URL
}

func (c *chunker) read(ctx context.Context, open resourcesync.OpenFunc, file string) error {
	if open == nil {
		open = resourcesync.Open
	}
	rc, err := open(ctx, file)
	if err != nil {
		return err
	}
	defer rc.Close()
	dec, err := resourcesync.NewDecoder(rc)
	if err != nil {
		return &resourcesync.OpenError{Loc: file, Err: err}
	}
	for {
		u, err := dec.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return &resourcesync.OpenError{Loc: file, Err: err}
		}
		if t, _ := u.ChangeTime(); !t.After(c.res.From) || t.After(c.res.Until) {
			continue // an earlier run's change
		}
		if len(c.pending) == chunkSize {
			last, _ := c.pending[len(c.pending)-1].ChangeTime()
			if err := c.flush(last); err != nil {
				return err
			}
		}
		c.pending = append(c.pending, u)
	}
}

// flush sends the pending entries as the interval (c.from, until].
func (c *chunker) flush(until time.Time) error {
	if len(c.pending) == 0 {
		return nil
	}
	body, err := encode(c.res.CapabilityList, resourcesync.MD{Capability: resourcesync.CapChangeNotification, From: c.from, Until: until}, c.pending)
	if err != nil {
		return err
	}
	if err := c.send(c.from, until, body); err != nil {
		return err
	}
	c.from, c.pending = until, c.pending[:0]
	return nil
}

// encode writes a notification: a <urlset> with its rs:ln rel="up" to the
// Capability List and its rs:md.
func encode(capabilityList string, md resourcesync.MD, urls []resourcesync.URL) ([]byte, error) {
	var buf bytes.Buffer
	h := resourcesync.Header{Kind: resourcesync.URLSet, MD: md}
	if capabilityList != "" {
		h.Links = []resourcesync.Link{{Rel: "up", Href: capabilityList}}
	}
	if err := resourcesync.EncodeAll(&buf, h, urls); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
