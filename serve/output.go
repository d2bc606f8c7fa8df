package serve

import (
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path"
	"time"

	"github.com/rsdump/rsdump/layout"
	"github.com/rsdump/rsdump/metalink"
	"github.com/rsdump/rsdump/metalink/httpheader"
	"github.com/rsdump/rsdump/sign"
)

// Media types of pack's outputs. Sitemaps go out as application/xml, the
// type RFC 7303 prefers to text/xml and the one the manifests' rel=contents
// links give.
const (
	typeXML = "application/xml"
	typeZIP = "application/zip"
)

func outputType(name string) string {
	switch path.Ext(name) {
	case ".zip":
		return typeZIP
	case ".meta4":
		return metalink.MediaType
	case sign.Suffix:
		return sign.MediaType // a document's signature
	}
	return typeXML // the documents, and the Source Description
}

// serveOutput serves one of the files pack wrote. http.ServeContent does
// Range, If-Range, If-None-Match, If-Modified-Since and HEAD.
func (h *handler) serveOutput(w http.ResponseWriter, r *http.Request, name string) {
	f, fi, err := open(h.dir, name, false, nil)
	if err != nil {
		http.NotFound(w, r)
		return
	}
	defer f.Close()
	hdr := w.Header()
	hdr.Set("Content-Type", outputType(name))
	hdr.Set("ETag", fileETag(fi.Size(), fi.ModTime().UnixNano()))
	if path.Ext(name) == ".zip" {
		h.packageHeaders(hdr, r, name, fi.Size())
	}
	http.ServeContent(w, r, "", fi.ModTime(), f)
}

// packageHeaders adds RFC 6249's fields to a package response: its
// SHA-256 as an instance digest (and as the ETag, the same on every mirror
// serving the same bytes), its mirrors, and its Metalink. They go on HEAD
// and ranged responses alike. The digest comes from the dump document, and
// only when the length there is the file's.
func (h *handler) packageHeaders(hdr http.Header, r *http.Request, name string, size int64) {
	if sum, ok := h.sums.lookup(name, size); ok {
		s := hex.EncodeToString(sum[:])
		if v, err := httpheader.Digest("sha-256", s); err == nil {
			hdr.Set("Digest", v)
			hdr.Set("ETag", `"sha-256-`+s+`"`)
		}
		if v, err := httpheader.ReprDigest("sha-256", s); err == nil {
			hdr.Set("Repr-Digest", v) // RFC 9530, which obsoletes RFC 3230
		}
	}
	self := h.selfURL(r)
	for i, m := range h.mirrors {
		if m.BaseURL == self {
			continue // a client must drop a link to the server itself
		}
		l := httpheader.Link{URL: m.BaseURL + url.PathEscape(name), Rel: []string{httpheader.RelDuplicate}, Pri: m.Priority, Geo: m.Location}
		if l.Pri == 0 {
			l.Pri = i + 1
		}
		hdr.Add("Link", l.String())
	}
	if isFile(h.dir, name+".meta4") {
		l := httpheader.Link{URL: self + url.PathEscape(name+".meta4"), Rel: []string{httpheader.RelDescribedBy}, Type: metalink.MediaType}
		hdr.Add("Link", l.String())
	}
}

// selfURL is the absolute URL the directory is served at: the dump URL
// when it names a host, else the one the request came to.
func (h *handler) selfURL(r *http.Request) string {
	if h.dumpURL != "" {
		return h.dumpURL
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return (&url.URL{Scheme: scheme, Host: r.Host, Path: h.dumpPath}).String()
}

// fileETag is the validator of a file without a known digest: its size
// and modification time, which change when pack rewrites it.
func fileETag(size, mtime int64) string {
	return fmt.Sprintf(`"%x-%x"`, size, mtime)
}

// capabilityLink is the HTTP Link discovery of §6.3.3 for a resource: the
// Capability List that covers it, when the directory has one.
func (h *handler) capabilityLink(r *http.Request) string {
	if !isFile(h.dir, layout.CapabilityListName) {
		return ""
	}
	return h.linkCapabilityList(r)
}

func (h *handler) linkCapabilityList(r *http.Request) string {
	return httpheader.Link{URL: h.selfURL(r) + layout.CapabilityListName, Rel: []string{"resourcesync"}}.String()
}

// capabilityRecheck is how long resourceLink trusts what it found of the
// Capability List. A resource's response may then name the list up to a
// second after it is gone, or leave it out up to a second after it came:
// as it would, had its request come a second earlier. pack writes the
// list once a dump, by rename; a Destination that follows the link finds
// the list, or the 404 it would find a moment later anyway.
const capabilityRecheck = time.Second

// seenLink is what resourceLink found: whether the Capability List was
// there, until when to trust it, and its link as made for a request to
// host (by https or not).
type seenLink struct {
	until   time.Time
	present bool
	host    string
	https   bool
	link    string
}

// resourceLink is capabilityLink for the resources, whose requests come
// many at a time: the Capability List is looked for at most once every
// capabilityRecheck, not once a request (an lstat each), and its link
// is made once for every host it is asked for in turn. The index and
// the Tracked Resource Set look at each request.
func (h *handler) resourceLink(r *http.Request) string {
	now := time.Now()
	s := h.seen.Load()
	if s == nil || !now.Before(s.until) {
		s = &seenLink{until: now.Add(capabilityRecheck), present: isFile(h.dir, layout.CapabilityListName)}
		h.seen.Store(s)
	}
	if !s.present {
		return ""
	}
	host, https := r.Host, r.TLS != nil
	if h.dumpURL != "" {
		host, https = "", false // the link is on the dump URL's host
	}
	if s.link != "" && s.host == host && s.https == https {
		return s.link
	}
	l := h.linkCapabilityList(r)
	h.seen.Store(&seenLink{until: s.until, present: true, host: host, https: https, link: l})
	return l
}

// isFile reports whether name is a regular file in root, to link to it.
func isFile(root *os.Root, name string) bool {
	fi, err := root.Lstat(name)
	return err == nil && fi.Mode().IsRegular()
}
