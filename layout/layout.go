// Package layout owns the shape of a pack output directory: the names of
// the documents and packages pack writes there (Z39.99-2014 §8-§13), which
// files are output, so that a server of the directory publishes those and
// nothing else (IsOutput), the mirrors a package is published at, the
// notification channels a Capability List advertises, and what a run
// published (Published). pack writes a directory in this shape; serve and
// notify read it without depending on pack.
package layout

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/rsdump/rsdump/resourcesync"
	"github.com/rsdump/rsdump/sign"
)

// The documents pack writes beside its packages under fixed names.
const (
	// DumpName is the Resource Dump; with more than 50,000 packages it is
	// a Resource Dump Index over numbered parts.
	DumpName           = "resourcedump.xml"
	ResourceListName   = "resourcelist.xml"
	ChangeListName     = "changelist.xml"
	ChangeDumpName     = "changedump.xml"
	CapabilityListName = "capabilitylist.xml"
	// SourceDescriptionName is the well-known URI of §6.3.2, relative to
	// the output directory: it is found only when the directory is served
	// at the root of its host.
	SourceDescriptionName = ".well-known/resourcesync"
)

// packNames matches the numbered files pack writes in its output
// directory: packages, their detached manifests and Metalinks, and the
// parts of an index. A later, smaller run may leave some of these behind.
// Only regular files count: pack never writes a symlink, so one of these
// names is someone else's and is left alone.
var packNames = regexp.MustCompile(`^((resource|change)dump-((shard\d+of\d+-)?\d{5,}\.(zip|manifest\.xml|zip\.meta4)|part\d{5,}\.xml)|(resource|change)list-part\d{5,}\.xml)$`)

// docNames are the documents pack writes under fixed names.
var docNames = map[string]bool{
	DumpName: true, ChangeDumpName: true, ResourceListName: true, ChangeListName: true,
	CapabilityListName: true, SourceDescriptionName: true,
}

// IsOutput reports whether name, a slash-separated path relative to an
// output directory, is one pack writes there: packages, manifests,
// Metalinks, dump documents, lists, the Capability List and the Source
// Description, and the signature NAME.asc of each document (IsDocument).
// It is false for the journal, the state file and temporary files. A
// server of the directory uses it as its allowlist.
func IsOutput(name string) bool {
	if doc, ok := strings.CutSuffix(name, sign.Suffix); ok {
		return IsDocument(doc) // a document's signature
	}
	return docNames[name] || packNames.MatchString(name)
}

// IsDocument reports whether name is a ResourceSync document pack writes:
// a dump document, a list, an index or its part, a detached manifest, the
// Capability List, the Source Description. A run that signs writes the
// signature of each beside it, NAME.asc.
func IsDocument(name string) bool {
	return name == SourceDescriptionName || IsOutput(name) && strings.HasSuffix(name, ".xml")
}

// IsNumbered reports whether name is one of the numbered files pack writes
// (packNames): a later, smaller run may leave some of these behind.
func IsNumbered(name string) bool { return packNames.MatchString(name) }

// Mirror is one place a package is published.
type Mirror struct {
	BaseURL  string
	Priority int    // 1..999999, 0 = none
	Location string // ISO 3166-1 alpha-2, optional
}

// ParseMirror reads a --mirror value: URL[,priority=N][,location=CC].
func ParseMirror(s string) (Mirror, error) {
	parts := strings.Split(s, ",")
	u, err := resourcesync.CleanBaseURL(parts[0])
	if err != nil {
		return Mirror{}, fmt.Errorf("mirror: %w", err)
	}
	m := Mirror{BaseURL: u}
	for _, p := range parts[1:] {
		k, v, _ := strings.Cut(p, "=")
		switch k {
		case "priority":
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > 999999 {
				return m, fmt.Errorf("mirror %q: priority must be 1..999999", s)
			}
			m.Priority = n
		case "location":
			if len(v) != 2 || !isAlpha(v) {
				return m, fmt.Errorf("mirror %q: location must be a two-letter country code", s)
			}
			m.Location = strings.ToLower(v)
		default:
			return m, fmt.Errorf("mirror %q: unknown option %q (want priority=N or location=CC)", s, k)
		}
	}
	return m, nil
}

func isAlpha(s string) bool {
	for _, c := range s {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z') {
			return false
		}
	}
	return true
}

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

// SetDefaults checks the URLs and fills in the default topics.
func (c *Channels) SetDefaults() error {
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

// Entries are the Capability List's entries for the channels.
func (c *Channels) Entries() []resourcesync.URL {
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

// Published is what a pack run published, for those who tell others of
// it (package notify).
type Published struct {
	// Documents are the documents the run created or changed, in the
	// order written, when its Channels have a hub.
	Documents []Document
	// Channels and CapabilityList are the run's, defaults filled in.
	Channels       Channels
	CapabilityList string
	// From and Until are the interval a --changes run's changes cover;
	// zero for a run that ships no changes.
	From, Until time.Time
}
