package pack

import (
	"bytes"
	"fmt"
	"path/filepath"
	"time"

	"github.com/rsdump/rsdump/resourcesync"
)

// DumpName is the Resource Dump document pack writes; with more than
// 50,000 packages it is a Resource Dump Index over DumpPartName documents.
const DumpName = "resourcedump.xml"

// dumpPartName names the n-th Resource Dump under an index.
func dumpPartName(n int) string { return fmt.Sprintf("resourcedump-part%05d.xml", n) }

// dumpParts is the number of parts writeDump writes for n packages: none
// when they fit one document.
func dumpParts(n int) int {
	if n <= resourcesync.MaxEntries {
		return 0
	}
	return (n + resourcesync.MaxEntries - 1) / resourcesync.MaxEntries
}

// writeDump writes the Resource Dump, or an index and its parts when the
// packages do not fit one document.
func writeDump(o *Options, dir string, at, completed time.Time, pkgs []PackageInfo) error {
	if dumpParts(len(pkgs)) == 0 {
		return writeDumpPart(o, dir, DumpName, at, completed, pkgs, "")
	}
	var parts []resourcesync.URL
	for i := range dumpParts(len(pkgs)) {
		chunk := pkgs[i*resourcesync.MaxEntries : min(len(pkgs), (i+1)*resourcesync.MaxEntries)]
		name := dumpPartName(i + 1)
		if err := writeDumpPart(o, dir, name, at, completed, chunk, o.DumpURL+DumpName); err != nil {
			return err
		}
		parts = append(parts, resourcesync.URL{Loc: o.DumpURL + name, MD: &resourcesync.MD{At: at, Completed: completed}})
	}
	h := dumpHeader(o, resourcesync.SitemapIndex, at, completed, "")
	return encodeFile(filepath.Join(dir, DumpName), h, parts)
}

func dumpHeader(o *Options, kind resourcesync.Kind, at, completed time.Time, index string) resourcesync.Header {
	h := resourcesync.Header{Kind: kind, MD: resourcesync.MD{Capability: resourcesync.CapResourceDump, At: at, Completed: completed}}
	if o.CapabilityList != "" {
		h.Links = append(h.Links, resourcesync.Link{Rel: "up", Href: o.CapabilityList})
	}
	if index != "" {
		h.Links = append(h.Links, resourcesync.Link{Rel: "index", Href: index})
	}
	return h
}

func writeDumpPart(o *Options, dir, name string, at, completed time.Time, pkgs []PackageInfo, index string) error {
	urls := make([]resourcesync.URL, len(pkgs))
	for i, p := range pkgs {
		urls[i] = packageURL(o, p)
	}
	return encodeFile(filepath.Join(dir, name), dumpHeader(o, resourcesync.URLSet, at, completed, index), urls)
}

// packageURL is a package's entry in the Resource Dump: its URL, length,
// hash and snapshot interval, its manifest, and its mirrors and Metalink
// when there are any.
func packageURL(o *Options, p PackageInfo) resourcesync.URL {
	u := resourcesync.URL{
		Loc: o.DumpURL + p.Name,
		MD: &resourcesync.MD{
			Type: "application/zip", Length: resourcesync.Int64(p.Length), Hash: "sha-256:" + p.SHA256,
			At: p.At, Completed: p.Completed,
		},
		Links: []resourcesync.Link{{Rel: "contents", Href: o.DumpURL + p.Manifest, Type: "application/xml"}},
	}
	if o.Metalink != nil {
		u.Links = append(u.Links, mirrorLinks(o, p)...)
	}
	return u
}

func encodeFile(path string, h resourcesync.Header, urls []resourcesync.URL) error {
	var buf bytes.Buffer
	enc, err := resourcesync.NewEncoder(&buf, h)
	if err != nil {
		return err
	}
	for _, u := range urls {
		if err := enc.Encode(u); err != nil {
			return fmt.Errorf("%s: %w", filepath.Base(path), err)
		}
	}
	if err := enc.Close(); err != nil {
		return err
	}
	return writeFileAtomic(path, buf.Bytes())
}
