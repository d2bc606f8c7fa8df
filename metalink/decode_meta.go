package metalink

import (
	"encoding/xml"
	"fmt"
	"strings"
	"time"
)

// Readers for the metadata elements that Metalink 3 and 4 share or that
// sit at the document level.

// publisher reads attributes name and url, and also the Metalink 3 form
// with <name> and <url> child elements, which MirrorBrain still writes.
// A publisher without a name is dropped (§4.2.12.1 requires one).
func (d *decoder) publisher(t xml.StartElement, ns string, ref elemRef) (*Publisher, error) {
	p := &Publisher{}
	d.attrs(t, ref, func(n, v string) bool {
		switch n {
		case "name":
			p.Name = v
		case "url":
			p.URL = d.trimmed(v, elemRef{ref.name, 0, "url"})
		default:
			return false
		}
		return true
	})
	childForm := false
	err := d.children(ns, nil, func(c xml.StartElement) error {
		var err error
		switch c.Name.Local {
		case "name":
			p.Name, err = d.readText(elemRef{name: "publisher/name"})
		case "url":
			p.URL, err = d.readIRI(elemRef{name: "publisher/url"})
		default:
			return d.skip()
		}
		childForm = true
		return err
	})
	if childForm && ns == Namespace && ref.name == "publisher" && d.fileIdx > 0 {
		d.warn(CodePublisherV3, ref, "publisher with <name>/<url> child elements (Metalink 3 form); read as attributes")
	}
	if p.Name == "" {
		d.warn(CodePublisherName, ref, "publisher without a name ignored (§4.2.12.1)")
		return nil, err
	}
	return p, err
}

// signature reads a signature of the file. One without a media type
// cannot be checked; verifiers must not refuse a document only because they
// cannot check a signature (§7.1), so it is dropped with a warning.
func (d *decoder) signature(t xml.StartElement, mediaType string) (*Signature, error) {
	ref := elemRef{name: "signature"}
	d.attrs(t, ref, func(n, _ string) bool { return n == "mediatype" })
	s, err := d.readText(ref)
	if mediaType == "" {
		d.warn(CodeSignatureMedia, ref, "signature without a usable mediatype ignored (§4.2.13.1)")
		return nil, err
	}
	return &Signature{MediaType: mediaType, Value: s}, err
}

func (d *decoder) origin(t xml.StartElement, m *Metalink) error {
	ref := elemRef{name: "origin"}
	d.attrs(t, ref, func(n, v string) bool {
		if n == "dynamic" {
			m.Dynamic = d.dynamic(v)
		}
		return n == "dynamic"
	})
	s, err := d.readIRI(ref)
	m.Origin = s
	return err
}

// dynamic parses origin@dynamic. The schema type is xsd:boolean, so 1 and
// 0 are accepted too, with a warning because the RFC text says "true".
func (d *decoder) dynamic(v string) *bool {
	ref := elemRef{name: "origin", attr: "dynamic"}
	var b bool
	switch d.trimmed(v, ref) {
	case "true":
		b = true
	case "false":
	case "1", "0":
		b = strings.TrimSpace(v) == "1"
		d.warn(CodeOriginDynamic, ref, fmt.Sprintf("dynamic=%q; RFC 5854 says \"true\" or \"false\"", v))
	default:
		d.warn(CodeOriginDynamic, ref, fmt.Sprintf("dynamic=%q is not a boolean; ignored", v))
		return nil
	}
	return &b
}

// date reads a Date construct (§3.2: RFC 3339 with T and a Z or offset)
// and returns it in UTC. Dates are informational, so a bad one is dropped.
func (d *decoder) date(ref elemRef) (time.Time, error) {
	s, err := d.readText(ref)
	if err != nil {
		return time.Time{}, err
	}
	t, perr := time.Parse(time.RFC3339Nano, d.trimmed(s, ref))
	if perr != nil {
		d.warn(CodeDateInvalid, ref, fmt.Sprintf("%q is not an RFC 3339 date-time with a time zone; ignored", s))
		return time.Time{}, nil
	}
	return t.UTC(), nil
}
