package metalink

import (
	"encoding/xml"
	"fmt"
	"strconv"
	"time"
)

// Metalink 3 (http://www.metalinker.org/, no RFC) is mapped onto the
// Metalink 4 model the way metalink-dev's 3to4 stylesheet does:
// files/file, verification/hash|pieces|signature, resources/url, with
// url type="bittorrent" becoming a metaurl and preference (higher is
// better, up to 100) becoming priority 101-preference. Document-level
// metadata is inherited by files that lack it. Whatever has no Metalink 4
// counterpart is dropped with one warning per element name.

func (d *decoder) metalink3(root xml.StartElement) (*Metalink, error) {
	d.v3 = true
	d.v3dropped = map[string]bool{}
	m := &Metalink{}
	d.rootAttrs3(root, m)
	var defaults File
	err := d.children(NamespaceV3, &m.Extensions, func(t xml.StartElement) error {
		switch t.Name.Local {
		case "files":
			return d.files3(m)
		case "publisher":
			p, err := d.publisher(t, NamespaceV3, elemRef{name: "publisher"})
			defaults.Publisher = p
			return err
		case "description", "identity", "version", "copyright", "logo":
			_, err := d.commonFileChild(t, &defaults)
			return err
		}
		d.dropV3(t.Name.Local)
		return d.skip()
	})
	inherit(m, &defaults)
	return m, err
}

func (d *decoder) rootAttrs3(root xml.StartElement, m *Metalink) {
	for _, a := range root.Attr {
		if a.Name.Space != "" {
			continue
		}
		ref := elemRef{name: "metalink", attr: a.Name.Local}
		switch a.Name.Local {
		case "origin":
			m.Origin = d.trimmed(a.Value, ref)
		case "generator":
			m.Generator = a.Value
		case "type":
			m.Dynamic = d.v3Type(a.Value, ref)
		case "pubdate":
			m.Published = d.date822(a.Value, ref)
		case "refreshdate":
			m.Updated = d.date822(a.Value, ref)
		}
	}
}

func (d *decoder) v3Type(v string, ref elemRef) *bool {
	var b bool
	switch v {
	case "dynamic":
		b = true
	case "static":
	default:
		d.warn(CodeOriginDynamic, ref, fmt.Sprintf("type=%q is neither \"dynamic\" nor \"static\"; ignored", v))
		return nil
	}
	return &b
}

// rfc822Layouts are the date forms Metalink 3 generators write
// ("Thu, 26 Apr 2012 09:52:22 +0000", "... GMT").
var rfc822Layouts = []string{time.RFC1123Z, time.RFC1123, time.RFC822Z, time.RFC822,
	"2 Jan 2006 15:04:05 -0700", "2 Jan 2006 15:04:05 MST"}

func (d *decoder) date822(v string, ref elemRef) time.Time {
	s := d.trimmed(v, ref)
	for _, layout := range rfc822Layouts {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC()
		}
	}
	d.warn(CodeDateInvalid, ref, fmt.Sprintf("%q is not an RFC 822 date; ignored", v))
	return time.Time{}
}

func inherit(m *Metalink, def *File) {
	for i := range m.Files {
		f := &m.Files[i]
		if f.Publisher == nil && def.Publisher != nil {
			p := *def.Publisher
			f.Publisher = &p
		}
		for _, s := range []struct{ dst, src *string }{
			{&f.Description, &def.Description}, {&f.Identity, &def.Identity},
			{&f.Version, &def.Version}, {&f.Copyright, &def.Copyright}, {&f.Logo, &def.Logo},
		} {
			if *s.dst == "" {
				*s.dst = *s.src
			}
		}
	}
}

func (d *decoder) dropV3(name string) {
	if d.v3dropped[name] {
		return
	}
	d.v3dropped[name] = true
	d.warn(CodeV3Unsupported, elemRef{name: name}, "Metalink 3 element with no Metalink 4 counterpart ignored")
}

func (d *decoder) files3(m *Metalink) error {
	return d.only3("files", "file", func(t xml.StartElement) error { return d.file3(t, m) })
}

// only3 reads the children of a Metalink 3 element that holds one kind
// of child (files, resources): each other one is dropped with a warning.
func (d *decoder) only3(parent, child string, each func(xml.StartElement) error) error {
	return d.children(NamespaceV3, nil, func(t xml.StartElement) error {
		if t.Name.Local != child {
			d.dropV3(parent + "/" + t.Name.Local)
			return d.skip()
		}
		return each(t)
	})
}

func (d *decoder) file3(t xml.StartElement, m *Metalink) error {
	f, err := d.newFile(m, attrValue(t, "name"))
	if err != nil {
		return err
	}
	defer func() { d.fileIdx, d.fileName = 0, "" }()
	var seen uint32
	return d.children(NamespaceV3, &f.Extensions, func(c xml.StartElement) error {
		if !d.once(&seen, c.Name.Local) {
			return d.skip()
		}
		if ok, err := d.commonFileChild(c, f); ok {
			return err
		}
		var err error
		switch c.Name.Local {
		case "publisher":
			f.Publisher, err = d.publisher(c, NamespaceV3, elemRef{name: "publisher"})
		case "verification":
			err = d.verification3(f)
		case "resources":
			err = d.resources3(f)
		default:
			d.dropV3(c.Name.Local)
			err = d.skip()
		}
		return err
	})
}

func (d *decoder) verification3(f *File) error {
	return d.children(NamespaceV3, nil, func(c xml.StartElement) error {
		switch c.Name.Local {
		case "hash":
			return d.hash(c, f)
		case "pieces":
			return d.pieces(c, f, v3HashName(attrValue(c, "type")))
		case "signature":
			if f.Signature != nil {
				d.warn(CodeDuplicate, elemRef{name: "signature"}, "repeated <signature> ignored; the first one is kept")
				return d.skip()
			}
			s, err := d.signature(c, v3SignatureType(attrValue(c, "type")))
			f.Signature = s
			return err
		}
		d.dropV3("verification/" + c.Name.Local)
		return d.skip()
	})
}

func (d *decoder) resources3(f *File) error {
	return d.only3("resources", "url", func(c xml.StartElement) error { return d.url3(c, f) })
}

func (d *decoder) url3(t xml.StartElement, f *File) error {
	torrent := attrValue(t, "type") == "bittorrent"
	ref := elemRef{"url", len(f.URLs) + 1, ""}
	if torrent {
		ref = elemRef{"metaurl", len(f.MetaURLs) + 1, ""}
	}
	var loc string
	var prio int
	for _, a := range t.Attr {
		switch {
		case a.Name.Space != "":
		case a.Name.Local == "location":
			loc = d.location(a.Value, ref)
		case a.Name.Local == "preference":
			prio = d.preference(a.Value, ref)
		}
	}
	s, err := d.readIRI(ref)
	if torrent {
		f.MetaURLs = append(f.MetaURLs, MetaURL{URL: s, MediaType: "torrent", Priority: prio})
	} else {
		f.URLs = append(f.URLs, URL{URL: s, Location: loc, Priority: prio})
	}
	return err
}

// preference maps Metalink 3 preference (0..100, higher first) to a
// priority (lower first). Values above 100 are treated as the best.
func (d *decoder) preference(v string, ref elemRef) int {
	ref.attr = "preference"
	n, err := strconv.Atoi(d.trimmed(v, ref))
	switch {
	case err != nil || n < 0:
		d.warn(CodePriorityInvalid, ref, fmt.Sprintf("preference %q is not a non-negative integer; ignored", v))
		return 0
	case n > 100:
		return 1
	}
	return 101 - n
}

// v3HashName maps Metalink 3 hash names to IANA textual names.
func v3HashName(s string) string {
	switch s {
	case "sha1":
		return "sha-1"
	case "sha224":
		return "sha-224"
	case "sha256":
		return "sha-256"
	case "sha384":
		return "sha-384"
	case "sha512":
		return "sha-512"
	}
	return s
}

func v3SignatureType(s string) string {
	if s == "pgp" {
		return "application/pgp-signature"
	}
	return ""
}
