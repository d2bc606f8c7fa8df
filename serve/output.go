package serve

import (
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path"

	"github.com/rsdump/rsdump/metalink"
	"github.com/rsdump/rsdump/metalink/httpheader"
	"github.com/rsdump/rsdump/pack"
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
	if !isFile(h.dir, pack.CapabilityListName) {
		return ""
	}
	return httpheader.Link{URL: h.selfURL(r) + pack.CapabilityListName, Rel: []string{"resourcesync"}}.String()
}

// isFile reports whether name is a regular file in root, to link to it.
func isFile(root *os.Root, name string) bool {
	fi, err := root.Lstat(name)
	return err == nil && fi.Mode().IsRegular()
}
