package pack

import (
	"fmt"
	"net/url"

	"github.com/rsdump/rsdump/layout"
	"github.com/rsdump/rsdump/resourcesync"
)

// capabilities are the documents a Capability List may name, in the
// order Example 13 of the spec lists them.
var capabilities = []struct{ name, capability string }{
	{layout.ResourceListName, resourcesync.CapResourceList},
	{layout.DumpName, resourcesync.CapResourceDump},
	{layout.ChangeListName, resourcesync.CapChangeList},
	{layout.ChangeDumpName, resourcesync.CapChangeDump},
}

// writeCapabilityList writes capabilitylist.xml naming every capability
// document now in dir (§9), whichever run wrote it: a Change Dump run
// keeps naming the Resource Dump of the run before. Its rel="up" link, which
// §9 makes mandatory, is the Source Description at the well-known URI of
// the host the documents are served from.
func writeCapabilityList(o *Options, out *output) error {
	var urls []resourcesync.URL
	for _, c := range capabilities {
		ok, err := out.exists(c.name)
		if err != nil {
			return err
		}
		if ok {
			urls = append(urls, resourcesync.URL{Loc: o.DumpURL + c.name, MD: &resourcesync.MD{Capability: c.capability}})
		}
	}
	urls = append(urls, o.Channels.Entries()...)
	h := resourcesync.Header{Kind: resourcesync.URLSet, MD: resourcesync.MD{Capability: resourcesync.CapCapabilityList}}
	h.Links = append(h.Links, resourcesync.Link{Rel: "up", Href: sourceDescriptionURL(o)})
	if o.DescribedBy != "" {
		h.Links = append(h.Links, resourcesync.Link{Rel: "describedby", Href: o.DescribedBy})
	}
	return encodeFile(out, layout.CapabilityListName, h, urls)
}

// sourceDescriptionURL is the well-known URI (§6.3.2) on the host of the
// dump URL.
func sourceDescriptionURL(o *Options) string {
	u, err := url.Parse(o.DumpURL)
	if err != nil { // setDefaults checked it
		return "/" + layout.SourceDescriptionName
	}
	return (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: "/" + layout.SourceDescriptionName}).String()
}

// writeSourceDescription writes .well-known/resourcesync (§8) naming this
// output's Capability List. The Capability Lists of other sets of
// resources that an earlier Source Description there named are kept: a
// Source may publish several sets from one host.
func writeSourceDescription(o *Options, out *output) error {
	others, err := otherCapabilityLists(out, layout.SourceDescriptionName, o.CapabilityList)
	if err != nil {
		return err
	}
	ours := resourcesync.URL{Loc: o.CapabilityList, MD: &resourcesync.MD{Capability: resourcesync.CapCapabilityList}}
	if o.DescribedBy != "" {
		ours.Links = []resourcesync.Link{{Rel: "describedby", Href: o.DescribedBy}}
	}
	h := resourcesync.Header{Kind: resourcesync.URLSet, MD: resourcesync.MD{Capability: resourcesync.CapDescription}}
	if o.DescribedBy != "" {
		h.Links = []resourcesync.Link{{Rel: "describedby", Href: o.DescribedBy}}
	}
	return encodeFile(out, layout.SourceDescriptionName, h, append(others, ours))
}

// otherCapabilityLists reads the entries of an existing Source
// Description but the one for ours. A file there that is not a Source
// Description is an error: it is not pack's to replace.
func otherCapabilityLists(out *output, name, ours string) ([]resourcesync.URL, error) {
	if ok, err := out.exists(name); !ok || err != nil {
		return nil, err
	}
	path := out.Loc(name)
	var others []resourcesync.URL
	l := resourcesync.Loader{
		Document: func(d *resourcesync.Document) error {
			if c := d.Header.MD.Capability; c != resourcesync.CapDescription {
				return fmt.Errorf("%s: capability %q, not a Source Description: left alone", path, c)
			}
			return nil
		},
		Entry: func(_ *resourcesync.Document, _ int, u resourcesync.URL) error {
			if u.Loc != ours {
				others = append(others, u)
			}
			return nil
		},
		NoParts: true,
	}
	if err := out.load(&l, name); err != nil {
		return nil, err
	}
	return others, nil
}

// writeCapabilities writes the Capability List and, when asked, the
// Source Description, once the run's documents are in place.
func (r *run) writeCapabilities() error {
	if err := writeCapabilityList(r.opts, r.out); err != nil {
		return err
	}
	if !r.opts.SourceDescription {
		return nil
	}
	return writeSourceDescription(r.opts, r.out)
}
