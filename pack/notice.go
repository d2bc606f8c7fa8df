package pack

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/rsdump/rsdump/resourcesync"
)

// Channels are the notification channels of the Source (ResourceSync
// Framework Notification §5, Change Notification §5): the WebSub hub that
// carries them and the topic URI of each. Pack advertises them in the
// Capability List; package notify sends the notifications.
type Channels struct {
	Hub string // the hub's URL; empty: no channel is advertised
	// Topics is the prefix of the default topics, Topics+"framework" and
	// Topics+"changes"; default the hub's URL and "/".
	Topics string
	// Framework is the topic of framework notifications; default
	// Topics+"framework".
	Framework string
	// Change is the topic of change notifications; empty: none, unless
	// ChangeNotification gives the default, Topics+"changes".
	Change             string
	ChangeNotification bool
}

// setDefaults checks the URLs and fills in the default topics.
func (c *Channels) setDefaults() error {
	if c.Hub == "" {
		if c.Topics != "" || c.Framework != "" || c.Change != "" || c.ChangeNotification {
			return fmt.Errorf("notification topics need a hub")
		}
		return nil
	}
	for _, u := range []*string{&c.Hub, &c.Topics, &c.Framework, &c.Change} {
		if *u != "" && !resourcesync.IsURL(*u) {
			return fmt.Errorf("hub or topic %q: not an http(s) URL", *u)
		}
	}
	if c.Topics == "" {
		c.Topics = c.Hub
	}
	c.Topics = strings.TrimSuffix(c.Topics, "/") + "/"
	if c.Framework == "" {
		c.Framework = c.Topics + "framework"
	}
	if c.Change == "" && c.ChangeNotification {
		c.Change = c.Topics + "changes"
	}
	c.ChangeNotification = c.Change != ""
	return nil
}

// entries are the Capability List's entries for the channels.
func (c *Channels) entries() []resourcesync.URL {
	if c.Hub == "" {
		return nil
	}
	hub := []resourcesync.Link{{Rel: "hub", Href: c.Hub}}
	urls := []resourcesync.URL{{Loc: c.Framework, Links: hub, MD: &resourcesync.MD{Capability: resourcesync.CapFrameworkNotification}}}
	if c.Change != "" {
		urls = append(urls, resourcesync.URL{Loc: c.Change, Links: hub, MD: &resourcesync.MD{Capability: resourcesync.CapChangeNotification}})
	}
	return urls
}

// Document is a document a run created or changed: what a framework
// notification tells of it.
type Document struct {
	Loc        string    `json:"loc"`
	File       string    `json:"file"` // where the run wrote it: a path, or s3://BUCKET/KEY
	Capability string    `json:"capability"`
	Change     string    `json:"change"`          // created or updated
	Index      string    `json:"index,omitempty"` // the index it is a part of
	Datetime   time.Time `json:"datetime"`
	IsIndex    bool      `json:"is_index,omitempty"`
}

// published records the documents a run writes, when someone is to be
// told of them (Options.Channels has a hub): each with whether it is
// new, and none whose bytes did not change.
type published struct {
	loc  func(name string) string // the document's URL; nil: record none
	mu   sync.Mutex
	docs []Document
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
		case CapabilityListName:
			return o.CapabilityList
		case SourceDescriptionName:
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
	d := Document{Loc: o.docs.loc(name), File: o.Loc(name), Capability: h.MD.Capability, Change: change,
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
func (o *output) documents() []Document {
	o.docs.mu.Lock()
	defer o.docs.mu.Unlock()
	return append([]Document(nil), o.docs.docs...)
}
