package pack

import (
	"bytes"
	"fmt"
	"time"

	"github.com/rsdump/rsdump/layout"
	"github.com/rsdump/rsdump/resourcesync"
)

// dumpKind is what differs between the two kinds of dump pack writes.
// Everything else, packages, manifests, Metalinks, journal and the dump
// document writer, is one code path.
type dumpKind struct {
	doc        string // the dump document
	prefix     string // of package and part names
	dir        string // directory of the bitstreams in a package
	capability string
	manifest   string // capability of the package manifests
	shard      string // "shard2of3" for the packages of a shard, else ""
	list       string // prefix of the parts of the run's list; "" for a shard, which writes none
}

var (
	resourceDump = &dumpKind{layout.DumpName, "resourcedump", "resources", resourcesync.CapResourceDump, resourcesync.CapResourceDumpManifest, "", "resourcelist"}
	changeDump   = &dumpKind{layout.ChangeDumpName, "changedump", "changes", resourcesync.CapChangeDump, resourcesync.CapChangeDumpManifest, "", "changelist"}
)

func (k *dumpKind) packageName(seq int) string { return fmt.Sprintf("%s-%05d.zip", k.prefix, seq) }

// partName names the n-th dump document under an index.
func (k *dumpKind) partName(n int) string { return fmt.Sprintf("%s-part%05d.xml", k.prefix, n) }

func (k *dumpKind) changes() bool { return k == changeDump }

// dumpPartName names the n-th Resource Dump under an index.
func dumpPartName(n int) string { return resourceDump.partName(n) }

// dumpParts is the number of parts writeDump writes for n packages: none
// when they fit one document.
func dumpParts(n int) int {
	if n <= resourcesync.MaxEntries {
		return 0
	}
	return (n + resourcesync.MaxEntries - 1) / resourcesync.MaxEntries
}

// writeDump writes the Resource Dump document listing pkgs, or an index
// and its parts, which share its snapshot times, when they do not fit one
// document. md holds the document's times: at and completed. A Change
// Dump is written a run at a time into its index (writeChanges).
func writeDump(o *Options, out *output, k *dumpKind, md resourcesync.MD, pkgs []resourcesync.URL) error {
	md.Capability = k.capability
	if dumpParts(len(pkgs)) == 0 {
		return encodeFile(out, k.doc, dumpHeader(o, resourcesync.URLSet, md, ""), pkgs)
	}
	var parts []resourcesync.URL
	for i := range dumpParts(len(pkgs)) {
		chunk := pkgs[i*resourcesync.MaxEntries : min(len(pkgs), (i+1)*resourcesync.MaxEntries)]
		name := k.partName(i + 1)
		pmd := md
		if err := encodeFile(out, name, dumpHeader(o, resourcesync.URLSet, pmd, o.DumpURL+k.doc), chunk); err != nil {
			return err
		}
		pmd.Capability = ""
		parts = append(parts, resourcesync.URL{Loc: o.DumpURL + name, MD: &pmd})
	}
	return encodeFile(out, k.doc, dumpHeader(o, resourcesync.SitemapIndex, md, ""), parts)
}

func dumpHeader(o *Options, kind resourcesync.Kind, md resourcesync.MD, index string) resourcesync.Header {
	h := resourcesync.Header{Kind: kind, MD: md}
	if o.CapabilityList != "" {
		h.Links = append(h.Links, resourcesync.Link{Rel: "up", Href: o.CapabilityList})
	}
	if index != "" {
		h.Links = append(h.Links, resourcesync.Link{Rel: "index", Href: index})
	}
	return h
}

// dumpEntries lists packages as entries of a dump document.
func dumpEntries(o *Options, pkgs []PackageInfo) []resourcesync.URL {
	urls := make([]resourcesync.URL, len(pkgs))
	for i, p := range pkgs {
		urls[i] = packageURL(o, p)
	}
	return urls
}

// packageURL is a package's entry in the dump document: its URL, length,
// hash and snapshot interval (or the interval of its changes), its
// manifest, and its mirrors and Metalink when there are any.
func packageURL(o *Options, p PackageInfo) resourcesync.URL {
	u := resourcesync.URL{
		Loc: o.DumpURL + p.Name,
		MD: &resourcesync.MD{
			Type: "application/zip", Length: resourcesync.Int64(p.Length), Hash: "sha-256:" + p.SHA256,
			At: p.At, Completed: p.Completed, From: p.From, Until: p.Until,
		},
		Links: []resourcesync.Link{{Rel: "contents", Href: o.DumpURL + p.Manifest, Type: "application/xml"}},
	}
	if !p.From.IsZero() {
		u.MD.At, u.MD.Completed = time.Time{}, time.Time{}
	}
	if o.Metalink != nil {
		u.Links = append(u.Links, mirrorLinks(o, p)...)
	}
	return u
}

func encodeFile(out *output, name string, h resourcesync.Header, urls []resourcesync.URL) error {
	var buf bytes.Buffer
	if err := resourcesync.EncodeAll(&buf, h, urls); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	out.note(name, h, buf.Bytes())
	return out.write(name, buf.Bytes())
}
