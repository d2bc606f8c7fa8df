package pack

import (
	"crypto/sha256"
	"encoding/hex"
	"sync"
	"time"

	"github.com/rsdump/rsdump/layout"
	"github.com/rsdump/rsdump/resourcesync"
)

// published records the documents a run writes, when someone is to be
// told of them (Options.Channels has a hub): each with whether it is
// new, and none whose bytes did not change.
type published struct {
	loc  func(name string) string // the document's URL; nil: record none
	mu   sync.Mutex
	docs []layout.Document
}

// track has the output record the documents written, when o has a hub
// to tell of them.
func (o *output) track(opts *Options) {
	if opts.Channels.Hub != "" {
		o.docs.loc = docURL(opts)
	}
}

// docURL is the URL a document of the output is published at.
func docURL(o *Options) func(string) string {
	return func(name string) string {
		switch name {
		case layout.CapabilityListName:
			return o.CapabilityList
		case layout.SourceDescriptionName:
			return sourceDescriptionURL(o)
		}
		return o.DumpURL + name
	}
}

// note records the document name with header h, before it is written.
// data is its content when known: a document written again as it was is
// no change.
func (o *output) note(name string, h resourcesync.Header, data []byte) {
	if o.docs.loc == nil {
		return
	}
	change := resourcesync.ChangeCreated
	if ok, err := o.exists(name); err == nil && ok {
		change = resourcesync.ChangeUpdated
		if data != nil {
			sum := sha256.Sum256(data)
			if o.sameFile(name, int64(len(data)), hex.EncodeToString(sum[:])) {
				return
			}
		}
	}
	d := layout.Document{Loc: o.docs.loc(name), File: o.Loc(name), Capability: h.MD.Capability, Change: change,
		Datetime: time.Now().UTC().Truncate(time.Second), IsIndex: h.Kind == resourcesync.SitemapIndex}
	for _, l := range h.Links {
		if l.Rel == "index" {
			d.Index = l.Href
		}
	}
	o.docs.mu.Lock()
	o.docs.docs = append(o.docs.docs, d)
	o.docs.mu.Unlock()
}

// documents are the documents recorded, in the order written.
func (o *output) documents() []layout.Document {
	o.docs.mu.Lock()
	defer o.docs.mu.Unlock()
	return append([]layout.Document(nil), o.docs.docs...)
}
