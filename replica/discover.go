package replica

import (
	"bufio"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/rsdump/rsdump/internal/httpc"
	"github.com/rsdump/rsdump/metalink/httpheader"
	"github.com/rsdump/rsdump/resourcesync"
	"github.com/rsdump/rsdump/s3"
	"github.com/rsdump/rsdump/sign"
	"github.com/rsdump/rsdump/trs"
)

// Source is what discovery found out about a Source: the documents of its
// Capability List by capability, and how they were found.
type Source struct {
	Given          string            `json:"given"`                     // the address discovery started from
	Description    string            `json:"description,omitempty"`     // the Source Description read, if any
	CapabilityList string            `json:"capability_list,omitempty"` // the Capability List read, if any
	Route          []string          `json:"route"`                     // each step: "well-known", "html link", ...
	Docs           map[string]string `json:"documents"`                 // capability → document URL or path
	// Others are further Capability Lists a Source Description lists;
	// sync follows the first one only.
	Others []string `json:"other_capability_lists,omitempty"`
	// Channels are the notification channels the Capability List
	// advertises with their hub (Framework Notification §5).
	Channels []Channel `json:"channels,omitempty"`
	// TRS is the OSLC Tracked Resource Set given, when the address given
	// is one (it answers Turtle or RDF/XML): sync follows it (trs.go).
	// Its rel="resourcesync" Link, when it has one, gives the Docs whose
	// hashes the resources are checked against.
	TRS string `json:"tracked_resource_set,omitempty"`
}

// Channel is a notification channel: a WebSub topic, its capability
// (framework-notification or change-notification) and its hub.
type Channel struct {
	Capability string `json:"capability"`
	Topic      string `json:"topic"`
	Hub        string `json:"hub"`
}

// The capabilities sync uses.
var syncCaps = []string{resourcesync.CapResourceDump, resourcesync.CapChangeDump, resourcesync.CapResourceList, resourcesync.CapChangeList}

// ErrNotFound is a Source where no route of §6.3 leads to a ResourceSync
// document.
var ErrNotFound = errors.New("no ResourceSync document found")

// maxHops bounds the links discovery follows: a Source Description, a
// Capability List and two links in front of them are enough.
const maxHops = 6

// Discover finds the documents of the Source at loc (ResourceSync §6.3):
// loc may be the Source's base URL (its /.well-known/resourcesync Source
// Description is read), a Source Description, a Capability List, an HTML
// page with <link rel="resourcesync">, any resource whose response has an
// HTTP Link header with rel="resourcesync", or a dump or list document
// itself (a file or a URL), whose rel="up" Capability List, when it links
// one, gives the others. c nil is rsdump's default client.
func Discover(ctx context.Context, c *http.Client, loc string) (*Source, error) {
	d := &discovery{c: c, src: &Source{Given: loc, Docs: map[string]string{}}}
	err := d.follow(ctx, loc, "given", 0)
	if errors.Is(err, ErrNotFound) && resourcesync.IsURL(loc) {
		err = d.wellKnown(ctx, loc, err)
	}
	if err != nil {
		return nil, err
	}
	if !d.useful() {
		return nil, fmt.Errorf("%s: %w: the Source lists no Resource Dump, Change Dump, Resource List or Change List", loc, ErrNotFound)
	}
	return d.src, nil
}

type discovery struct {
	c   *http.Client
	src *Source
}

func (d *discovery) useful() bool {
	if d.src.TRS != "" {
		return true
	}
	for _, c := range syncCaps {
		if d.src.Docs[c] != "" {
			return true
		}
	}
	return false
}

// wellKnown tries /.well-known/resourcesync beside the path given, then at
// the server's root (§6.3.2 puts it at the root; a Source served under a
// path prefix may have it there).
func (d *discovery) wellKnown(ctx context.Context, loc string, first error) error {
	for _, wk := range wellKnownURLs(loc) {
		err := d.follow(ctx, wk, "well-known", 1)
		var se *sign.Error
		if err == nil || ctx.Err() != nil || errors.As(err, &se) {
			return err // a Source Description whose signature fails is refused, not missed
		}
	}
	return first
}

func wellKnownURLs(loc string) []string {
	u, err := url.Parse(loc)
	if err != nil {
		return nil
	}
	u.RawQuery, u.Fragment = "", ""
	var out []string
	if dir := strings.TrimSuffix(u.Path, "/"); dir != "" {
		v := *u
		v.Path, v.RawPath = dir+"/.well-known/resourcesync", ""
		out = append(out, v.String())
	}
	u.Path, u.RawPath = "/.well-known/resourcesync", ""
	return append(out, u.String())
}

// follow reads the document at loc and acts on what it is.
func (d *discovery) follow(ctx context.Context, loc, how string, hops int) error {
	if hops > maxHops {
		return fmt.Errorf("%s: more than %d discovery links followed", loc, maxHops)
	}
	body, header, err := d.open(ctx, loc)
	if err != nil {
		var se *httpc.StatusError
		if errors.As(err, &se) && how != "given" {
			return fmt.Errorf("%s: %w (%s)", loc, ErrNotFound, se.Status)
		}
		if errors.As(err, &se) {
			return fmt.Errorf("%w: %w", ErrNotFound, err)
		}
		return err
	}
	defer body.Close()
	if how == "given" && trs.IsMediaType(header.Get("Content-Type")) {
		return d.trackedResourceSet(ctx, loc, header, hops)
	}
	br := bufio.NewReaderSize(body, 64<<10)
	head, _ := br.Peek(4096)
	if !resourcesync.LooksXML(head) || resourcesync.LooksHTML(head, header.Get("Content-Type")) {
		next, err := d.linked(ctx, loc, br, header)
		if err != nil {
			return err
		}
		if next != "" {
			d.src.Route = append(d.src.Route, how)
			return d.follow(ctx, next, d.linkHow(header), hops+1)
		}
		return fmt.Errorf("%s: %w: not a ResourceSync document, and no rel=\"resourcesync\" link", loc, ErrNotFound)
	}
	d.src.Route = append(d.src.Route, how)
	doc, err := d.opener().Verify(ctx, loc, br)
	if err != nil {
		return err
	}
	defer doc.Close()
	return d.document(ctx, loc, doc, hops)
}

// open GETs a URL, keeping its headers, or opens a file. It may be an
// HTML page or carry only a Link header, so its signature, when ctx
// requires one, is checked (Opener.Verify) once it turns out to be a
// document.
func (d *discovery) open(ctx context.Context, loc string) (io.ReadCloser, http.Header, error) {
	return d.opener().OpenHeader(ctx, loc)
}

func (d *discovery) opener() resourcesync.Opener {
	return resourcesync.Opener{Client: d.c, Accept: "application/xml, text/xml;q=0.9, text/html;q=0.5, */*;q=0.1", Unsigned: true}
}

func (d *discovery) linkHow(h http.Header) string {
	if len(linkTargets(h, "http://x/", "resourcesync")) > 0 {
		return "link header"
	}
	return "html link"
}

// linked is the rel="resourcesync" target of an HTTP Link header (only
// http and https are taken from one) or, in an HTML page, of a <link>
// element (§6.3.3).
func (d *discovery) linked(ctx context.Context, loc string, r io.Reader, h http.Header) (string, error) {
	if ts := linkTargets(h, loc, "resourcesync"); len(ts) > 0 {
		return ts[0], nil
	}
	if href := htmlLink(r, "resourcesync"); href != "" {
		return htmlRef(ctx, loc, href)
	}
	return "", nil
}

// htmlRef is what a link in the HTML page at page names: a relative href
// resolves against the page's URL, as in HTML, and the result is held to
// resourcesync's rule for references.
func htmlRef(ctx context.Context, page, href string) (string, error) {
	if base, err := url.Parse(page); err == nil && resourcesync.IsURL(page) {
		if u, err := base.Parse(href); err == nil {
			href = u.String()
		}
	}
	return resourcesync.Resolve(ctx, page, href)
}

// linkTargets are the targets of the Link header fields with relation
// rel, resolved against base: the parser get and serve use for RFC 6249.
func linkTargets(h http.Header, base, rel string) []string {
	var out []string
	for _, l := range httpheader.ParseLinks(h.Values("Link"), base) {
		if l.Has(rel) {
			out = append(out, l.URL)
		}
	}
	return out
}

// htmlLink finds <link rel="..." href="..."> in an HTML page, reading it
// leniently: HTML is not XML, but its <head> tokenises well enough.
func htmlLink(r io.Reader, rel string) string {
	dec := xml.NewDecoder(r)
	dec.Strict, dec.AutoClose, dec.Entity = false, xml.HTMLAutoClose, xml.HTMLEntity
	for {
		tok, err := dec.Token()
		if err != nil {
			return ""
		}
		se, ok := tok.(xml.StartElement)
		if !ok {
			continue
		}
		switch strings.ToLower(se.Name.Local) {
		case "body":
			return "" // discovery links live in <head>
		case "link":
			if href, ok := relHref(se, rel); ok {
				return href
			}
		}
	}
}

func relHref(se xml.StartElement, rel string) (string, bool) {
	var rels, href string
	for _, a := range se.Attr {
		switch strings.ToLower(a.Name.Local) {
		case "rel":
			rels = strings.ToLower(a.Value)
		case "href":
			href = strings.TrimSpace(a.Value)
		}
	}
	for _, r := range strings.Fields(rels) {
		if r == rel && href != "" {
			return href, true
		}
	}
	return "", false
}

// errEnough stops reading a document whose header said all discovery
// needs.
var errEnough = errors.New("enough read")

// document acts on a ResourceSync document by its capability.
func (d *discovery) document(ctx context.Context, loc string, r io.Reader, hops int) error {
	var h resourcesync.Header
	var entries []resourcesync.URL
	ld := resourcesync.Loader{
		NoParts: true,
		Document: func(doc *resourcesync.Document) error {
			h = doc.Header
			switch h.MD.Capability {
			case resourcesync.CapDescription, resourcesync.CapCapabilityList:
				return nil
			}
			return errEnough
		},
		Entry: func(_ *resourcesync.Document, _ int, u resourcesync.URL) error {
			entries = append(entries, u)
			if len(entries) > resourcesync.MaxEntries {
				return errEnough
			}
			return nil
		},
	}
	if err := ld.Read(ctx, loc, r, nil); err != nil && !errors.Is(err, errEnough) {
		return err
	}
	switch c := h.MD.Capability; c {
	case resourcesync.CapDescription:
		return d.description(ctx, loc, entries, hops)
	case resourcesync.CapCapabilityList:
		return d.capabilityList(ctx, loc, entries)
	case resourcesync.CapResourceDump, resourcesync.CapChangeDump, resourcesync.CapResourceList, resourcesync.CapChangeList:
		d.src.Docs[c] = loc
		return d.up(ctx, loc, h, hops)
	default:
		return fmt.Errorf("%s: capability %q: sync needs a Source Description, Capability List, dump or list", loc, c)
	}
}

// description follows the first Capability List a Source Description
// lists.
func (d *discovery) description(ctx context.Context, loc string, entries []resourcesync.URL, hops int) error {
	d.src.Description = loc
	var lists []string
	for _, e := range entries {
		if e.MD == nil || e.MD.Capability == "" || e.MD.Capability == resourcesync.CapCapabilityList {
			cl, err := resourcesync.Resolve(ctx, loc, e.Loc)
			if err != nil {
				return err
			}
			lists = append(lists, cl)
		}
	}
	if len(lists) == 0 {
		return fmt.Errorf("%s: %w: the Source Description lists no Capability List", loc, ErrNotFound)
	}
	d.src.Others = lists[1:]
	return d.follow(ctx, lists[0], "capability list", hops+1)
}

// capabilityList records the documents a Capability List lists; one it
// may not name (resourcesync.Resolve) refuses the Source.
func (d *discovery) capabilityList(ctx context.Context, loc string, entries []resourcesync.URL) error {
	d.src.CapabilityList = loc
	for _, e := range entries {
		if e.MD == nil {
			continue
		}
		if ch, ok, err := channel(ctx, loc, e); ok || err != nil {
			if err != nil {
				return err
			}
			d.src.Channels = append(d.src.Channels, ch)
			continue
		}
		if c := e.MD.Capability; c != "" && d.src.Docs[c] == "" {
			doc, err := resourcesync.Resolve(ctx, loc, e.Loc)
			if err != nil {
				return err
			}
			d.src.Docs[c] = doc
		}
	}
	return nil
}

// channel is the notification channel entry e advertises, if it is one:
// its topic and hub are references of the Capability List like any other
// (resourcesync.Resolve), and both must be http(s) URLs.
func channel(ctx context.Context, loc string, e resourcesync.URL) (Channel, bool, error) {
	c := e.MD.Capability
	if c != resourcesync.CapFrameworkNotification && c != resourcesync.CapChangeNotification {
		return Channel{}, false, nil
	}
	hub := ""
	for _, l := range e.Links {
		if l.Rel == "hub" {
			hub = l.Href
		}
	}
	if hub == "" {
		return Channel{}, false, nil // a channel without its hub cannot be followed
	}
	ch := Channel{Capability: c}
	var err error
	if ch.Topic, err = httpRef(ctx, loc, c+" topic", e.Loc); err != nil {
		return Channel{}, false, err
	}
	if ch.Hub, err = httpRef(ctx, loc, c+" hub", hub); err != nil {
		return Channel{}, false, err
	}
	return ch, true, nil
}

// httpRef is the http(s) URL the reference ref of the document at loc
// names.
func httpRef(ctx context.Context, loc, what, ref string) (string, error) {
	v, err := resourcesync.Resolve(ctx, loc, ref)
	if err != nil {
		return "", err
	}
	if !resourcesync.IsURL(v) || s3.IsURL(v) {
		return "", fmt.Errorf("%s: the %s %s: not an http(s) URL", loc, what, v)
	}
	return v, nil
}

// up reads the Capability List a document links as rel="up", for the
// Source's other documents; the document given keeps its place. A list
// that cannot be read leaves just the document; a link or an entry the
// document may not make (resourcesync.Resolve) refuses the Source.
func (d *discovery) up(ctx context.Context, loc string, h resourcesync.Header, hops int) error {
	l, ok := h.Link("up")
	if !ok || d.src.CapabilityList != "" || hops >= maxHops {
		return nil
	}
	cl, err := resourcesync.Resolve(ctx, loc, l.Href)
	if err != nil {
		return err
	}
	raw, _, err := d.open(ctx, cl)
	if err != nil {
		return nil
	}
	defer raw.Close()
	body, err := d.opener().Verify(ctx, cl, raw)
	if err != nil {
		return nil // as one that cannot be read: the document given stands alone
	}
	defer body.Close()
	var entries []resourcesync.URL
	isCL := false
	ld := resourcesync.Loader{NoParts: true,
		Document: func(doc *resourcesync.Document) error {
			if isCL = doc.Header.MD.Capability == resourcesync.CapCapabilityList; !isCL {
				return errEnough
			}
			return nil
		},
		Entry: func(_ *resourcesync.Document, _ int, u resourcesync.URL) error {
			entries = append(entries, u)
			return nil
		},
	}
	if err := ld.Read(ctx, cl, body, nil); err == nil && isCL {
		return d.capabilityList(ctx, cl, entries)
	}
	return nil
}
