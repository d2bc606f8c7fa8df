// Package resourcesync reads and writes ResourceSync documents: the Sitemap
// <urlset> and <sitemapindex> formats with the rs:md and rs:ln extension
// elements of ANSI/NISO Z39.99-2014 §7. Both directions stream: a document
// of 50,000 entries is never held in memory as a tree.
package resourcesync

import "time"

// XML namespaces of the documents.
const (
	NSSitemap = "http://www.sitemaps.org/schemas/sitemap/0.9"
	NSRS      = "http://www.openarchives.org/rs/terms/"
)

// Sitemap protocol limits, which ResourceSync adopts (§7).
const (
	MaxEntries = 50000
	MaxBytes   = 50 * 1000 * 1000
)

// Kind is the root element of a document.
type Kind int

const (
	URLSet       Kind = iota // <urlset>, entries are <url>
	SitemapIndex             // <sitemapindex>, entries are <sitemap>
)

func (k Kind) String() string {
	if k == SitemapIndex {
		return "sitemapindex"
	}
	return "urlset"
}

// Capability values of §7.
const (
	CapResourceList         = "resourcelist"
	CapChangeList           = "changelist"
	CapResourceDump         = "resourcedump"
	CapChangeDump           = "changedump"
	CapResourceDumpManifest = "resourcedump-manifest"
	CapChangeDumpManifest   = "changedump-manifest"
	CapCapabilityList       = "capabilitylist"
	CapDescription          = "description"
	// The notification channels (Framework Notification §5, Change
	// Notification §5), which a Capability List advertises with the hub
	// that carries them (an rs:ln rel="hub").
	CapFrameworkNotification = "framework-notification"
	CapChangeNotification    = "change-notification"
)

// Change values of §7.
const (
	ChangeCreated = "created"
	ChangeUpdated = "updated"
	ChangeDeleted = "deleted"
)

// MD is an <rs:md> element. A zero time, an empty string or a nil Length
// means the attribute is absent.
type MD struct {
	Capability string
	At         time.Time
	Completed  time.Time
	From       time.Time
	Until      time.Time
	Datetime   time.Time
	Change     string
	Hash       string // raw attribute; see internal/digest for the codec
	Length     *int64
	Path       string
	Type       string
	Encoding   string
	// Pieces are rsdump's piece hashes of the bitstream (an extension in
	// its own namespace; see Pieces); nil for none.
	Pieces *Pieces
}

// IsZero reports whether no attribute is set.
func (m MD) IsZero() bool { return m == MD{} }

// Link is an <rs:ln> element. Pri 0 means the attribute is absent (the
// spec's default, 999,999, applies).
type Link struct {
	Rel      string
	Href     string
	Pri      int
	Hash     string
	Length   *int64
	Modified time.Time
	Path     string
	Type     string
	Encoding string
}

// URL is one <url> (or <sitemap>) entry. MD is nil when the entry has no
// <rs:md>.
type URL struct {
	Loc        string
	Lastmod    time.Time
	ChangeFreq string
	MD         *MD
	Links      []Link
}

// ChangeTime is the time of the change that an entry of a Change List or
// Change Dump Manifest records: its rs:md datetime (ResourceSync 1.1),
// else its <lastmod>, which a ResourceSync 1.0 document gives that time
// in (in 1.1 it is the resource's own last modification). ok is false
// when the entry gives no time of change: it has neither, or it is a
// deletion with no datetime, whose lastmod some 1.0 Sources (resync) set
// to the deleted resource's last modification rather than to the time
// of the deletion.
func (u URL) ChangeTime() (t time.Time, ok bool) {
	switch {
	case u.MD != nil && !u.MD.Datetime.IsZero():
		return u.MD.Datetime, true
	case u.MD != nil && u.MD.Change == ChangeDeleted, u.Lastmod.IsZero():
		return time.Time{}, false
	}
	return u.Lastmod, true
}

// Header is what a document says about itself: its root element, the
// <rs:md> (mandatory in ResourceSync documents) and the <rs:ln> children of
// the root.
type Header struct {
	Kind  Kind
	MD    MD
	Links []Link
}

// Int64 returns a pointer to n, for MD.Length and Link.Length.
func Int64(n int64) *int64 { return &n }

// Link returns the first link with the given rel, if any.
func (h Header) Link(rel string) (Link, bool) { return findLink(h.Links, rel) }

// Link returns the first link with the given rel, if any.
func (u URL) Link(rel string) (Link, bool) { return findLink(u.Links, rel) }

func findLink(ls []Link, rel string) (Link, bool) {
	for _, l := range ls {
		if l.Rel == rel {
			return l, true
		}
	}
	return Link{}, false
}
