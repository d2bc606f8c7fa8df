package metalink

import (
	"encoding/xml"
	"fmt"
	"strconv"
	"strings"
)

// singletons are the elements that may appear at most once in their
// parent (§4.1.1, §4.1.2); the value is a bit in a per-parent set.
var singletons = map[string]uint{
	"copyright": 0, "description": 1, "identity": 2, "logo": 3, "publisher": 4,
	"signature": 5, "size": 6, "version": 7, "generator": 8, "origin": 9,
	"published": 10, "updated": 11,
}

func (d *decoder) metalink4(root xml.StartElement) (*Metalink, error) {
	m := &Metalink{}
	d.attrs(root, elemRef{name: "metalink"}, noAttrs)
	var seen uint32
	var rootPub *Publisher
	err := d.children(Namespace, &m.Extensions, func(t xml.StartElement) error {
		if !d.once(&seen, t.Name.Local) {
			return d.skip()
		}
		ref := elemRef{name: t.Name.Local}
		var err error
		switch t.Name.Local {
		case "file":
			return d.file4(t, m)
		case "generator":
			m.Generator, err = d.readText(ref)
		case "origin":
			err = d.origin(t, m)
		case "published":
			m.Published, err = d.date(ref)
		case "updated":
			m.Updated, err = d.date(ref)
		case "publisher":
			rootPub, err = d.publisher(t, Namespace, ref)
		default:
			d.warn(CodeUnknownElement, ref, "element not allowed in <metalink>, ignored")
			return d.skip()
		}
		return err
	})
	if rootPub != nil {
		d.warn(CodePublisherV3, elemRef{name: "publisher"},
			"<publisher> belongs in <file> (Metalink 3 placement); applied to every file without one")
		applyPublisher(m, rootPub)
	}
	return m, err
}

func applyPublisher(m *Metalink, p *Publisher) {
	for i := range m.Files {
		if m.Files[i].Publisher == nil {
			c := *p
			m.Files[i].Publisher = &c
		}
	}
}

func noAttrs(string, string) bool { return false }

// attrs visits the unqualified attributes of t; set returns false for one
// it does not know. Namespace declarations, xml:lang and foreign
// attributes are ignored (§5.3).
func (d *decoder) attrs(t xml.StartElement, ref elemRef, set func(name, value string) bool) {
	for _, a := range t.Attr {
		switch {
		case isNSDecl(a.Name):
		case !d.isBound(a.Name.Space):
			d.warn(CodeUnboundPrefix, elemRef{ref.name, ref.idx, a.Name.Space + ":" + a.Name.Local},
				"attribute with an undeclared namespace prefix ignored")
		case a.Name.Space != "":
		case !set(a.Name.Local, a.Value) && !d.v3:
			d.warn(CodeUnknownAttribute, elemRef{ref.name, ref.idx, a.Name.Local},
				"attribute not defined by RFC 5854, ignored")
		}
	}
}

func attrValue(t xml.StartElement, name string) string {
	for _, a := range t.Attr {
		if a.Name.Space == "" && a.Name.Local == name {
			return a.Value
		}
	}
	return ""
}

// children calls fn for each child element in namespace ns, keeps foreign
// children in *ext (or skips them when ext is nil) and returns at the
// parent's end.
func (d *decoder) children(ns string, ext *[]Extension, fn func(xml.StartElement) error) error {
	for {
		tok, err := d.next()
		if err != nil {
			return err
		}
		switch t := tok.(type) {
		case xml.EndElement:
			return nil
		case xml.StartElement:
			if err := d.child(t, ns, ext, fn); err != nil {
				return err
			}
		}
	}
}

func (d *decoder) child(t xml.StartElement, ns string, ext *[]Extension, fn func(xml.StartElement) error) error {
	switch {
	case t.Name.Space == ns:
		return fn(t)
	case !d.usableName(t.Name):
		d.warn(CodeUnboundPrefix, elemRef{name: t.Name.Space + ":" + t.Name.Local},
			"element with an undeclared namespace prefix ignored")
		return d.skip()
	case ext == nil:
		return d.skip()
	}
	e, err := d.extension(t)
	if err == nil {
		*ext = append(*ext, e)
	}
	return err
}

func (d *decoder) usableName(n xml.Name) bool {
	return d.isBound(n.Space) && n.Local != "" && !strings.Contains(n.Local, ":")
}

// once reports whether t is the first of its kind when it is a singleton.
// A repeated size is an error (which one would a downloader trust?); for
// the others the first one wins.
func (d *decoder) once(seen *uint32, name string) bool {
	bit, ok := singletons[name]
	if !ok {
		return true
	}
	if *seen&(1<<bit) == 0 {
		*seen |= 1 << bit
		return true
	}
	if name == "size" {
		d.fail(CodeSizeDuplicate, elemRef{name: name}, "more than one <size> (§4.1.2 MUST NOT)")
	} else {
		d.warn(CodeDuplicate, elemRef{name: name}, "repeated <"+name+"> ignored; the first one is kept")
	}
	return false
}

func (d *decoder) newFile(m *Metalink, name string) (*File, error) {
	if len(m.Files) >= d.lim.MaxFiles {
		return nil, d.limit(CodeLimitFiles, fmt.Sprintf("more than %d files", d.lim.MaxFiles))
	}
	m.Files = append(m.Files, File{Name: name})
	d.fileIdx, d.fileName = len(m.Files), name
	return &m.Files[len(m.Files)-1], nil
}

func (d *decoder) file4(t xml.StartElement, m *Metalink) error {
	f, err := d.newFile(m, attrValue(t, "name"))
	if err != nil {
		return err
	}
	defer func() { d.fileIdx, d.fileName = 0, "" }()
	d.attrs(t, elemRef{name: "file"}, func(n, _ string) bool { return n == "name" })
	var seen uint32
	return d.children(Namespace, &f.Extensions, func(c xml.StartElement) error {
		if !d.once(&seen, c.Name.Local) {
			return d.skip()
		}
		return d.fileChild4(c, f)
	})
}

func (d *decoder) fileChild4(t xml.StartElement, f *File) error {
	if ok, err := d.commonFileChild(t, f); ok {
		return err
	}
	var err error
	switch t.Name.Local {
	case "hash":
		err = d.hash(t, f)
	case "pieces":
		err = d.pieces(t, f, attrValue(t, "type"))
	case "url":
		err = d.url4(t, f)
	case "metaurl":
		err = d.metaurl4(t, f)
	case "publisher":
		f.Publisher, err = d.publisher(t, Namespace, elemRef{name: "publisher"})
	case "signature":
		f.Signature, err = d.signature(t, attrValue(t, "mediatype"))
	default:
		d.warn(CodeUnknownElement, elemRef{name: t.Name.Local}, "element not allowed in <file>, ignored")
		return d.skip()
	}
	return err
}

// commonFileChild reads the file elements that Metalink 3 and 4 share.
func (d *decoder) commonFileChild(t xml.StartElement, f *File) (bool, error) {
	ref := elemRef{name: t.Name.Local}
	var dst *string
	switch t.Name.Local {
	case "size":
		return true, d.size(f)
	case "logo":
		s, err := d.readIRI(ref)
		f.Logo = s
		return true, err
	case "language":
		return true, d.appendText(&f.Languages, ref)
	case "os":
		return true, d.appendText(&f.OS, ref)
	case "copyright":
		dst = &f.Copyright
	case "description":
		dst = &f.Description
	case "identity":
		dst = &f.Identity
	case "version":
		dst = &f.Version
	default:
		return false, nil
	}
	d.attrs(t, ref, noAttrs)
	s, err := d.readText(ref)
	*dst = s
	return true, err
}

func (d *decoder) appendText(dst *[]string, ref elemRef) error {
	ref.idx = len(*dst) + 1
	s, err := d.readText(ref)
	if err == nil {
		*dst = append(*dst, s)
	}
	return err
}

func (d *decoder) size(f *File) error {
	ref := elemRef{name: "size"}
	s, err := d.readText(ref)
	if err != nil {
		return err
	}
	n, perr := strconv.ParseInt(d.trimmed(s, ref), 10, 64)
	if perr != nil || n < 0 {
		d.fail(CodeSizeInvalid, ref, fmt.Sprintf("%q is not a non-negative integer below 2^63", s))
		return nil
	}
	f.Size = &n
	return nil
}

func (d *decoder) readIRI(ref elemRef) (string, error) {
	s, err := d.readText(ref)
	return d.trimmed(s, ref), err
}

// hash reads a whole-file hash, mapping Metalink 3 names to IANA ones.
func (d *decoder) hash(t xml.StartElement, f *File) error {
	ref := elemRef{"hash", len(f.Hashes) + 1, ""}
	h := Hash{Type: attrValue(t, "type")}
	if d.v3 {
		h.Type = v3HashName(h.Type)
	}
	d.attrs(t, ref, func(n, _ string) bool { return n == "type" })
	s, err := d.readText(ref)
	if err != nil {
		return err
	}
	h.Value = d.hexValue(s, h.Type, ref)
	f.Hashes = append(f.Hashes, h)
	return nil
}

// hexValue trims a hash value and lower-cases it for a known algorithm:
// both repairs are safe, and leave the model in the form §4.2.4 wants.
func (d *decoder) hexValue(s, alg string, ref elemRef) string {
	s = d.trimmed(s, ref)
	if lower, changed := lowerHex(s, alg); changed {
		d.warn(CodeHashUppercase, ref, "hash value was upper-case hex; lower-cased (§4.2.4)")
		return lower
	}
	return s
}

func lowerHex(s, alg string) (string, bool) {
	n, ok := HashHexLen(alg)
	if !ok {
		return s, false
	}
	if hex, upper := scanHex(s, n); !hex || !upper {
		return s, false
	}
	return strings.ToLower(s), true
}

func (d *decoder) url4(t xml.StartElement, f *File) error {
	ref := elemRef{"url", len(f.URLs) + 1, ""}
	u := URL{}
	s, err := d.link4(t, ref, &u.Priority, func(n, v string) bool {
		if n != "location" {
			return false
		}
		u.Location = d.location(v, ref)
		return true
	})
	u.URL = s
	f.URLs = append(f.URLs, u)
	return err
}

func (d *decoder) metaurl4(t xml.StartElement, f *File) error {
	ref := elemRef{"metaurl", len(f.MetaURLs) + 1, ""}
	u := MetaURL{}
	s, err := d.link4(t, ref, &u.Priority, func(n, v string) bool {
		switch n {
		case "mediatype":
			u.MediaType = v
		case "name":
			u.Name = v
		default:
			return false
		}
		return true
	})
	u.URL = s
	f.MetaURLs = append(f.MetaURLs, u)
	return err
}

// link4 reads a url or metaurl element: the priority both carry, the
// attributes own takes (it says whether it knew n), and the IRI.
func (d *decoder) link4(t xml.StartElement, ref elemRef, priority *int, own func(n, v string) bool) (string, error) {
	d.attrs(t, ref, func(n, v string) bool {
		if n == "priority" {
			*priority = d.priority(v, ref)
			return true
		}
		return own(n, v)
	})
	return d.readIRI(ref)
}

// priority parses a url or metaurl priority. An invalid one only orders
// mirrors, so it is dropped with a warning rather than refusing the file.
func (d *decoder) priority(v string, ref elemRef) int {
	ref.attr = "priority"
	n, err := strconv.Atoi(d.trimmed(v, ref))
	if err != nil || n < 1 || n > DefaultPriority {
		d.warn(CodePriorityInvalid, ref, fmt.Sprintf("priority %q is not in 1..999999; ignored", v))
		return 0
	}
	return n
}

func (d *decoder) location(v string, ref elemRef) string {
	ref.attr = "location"
	if !isLocation(v) {
		d.warn(CodeLocationInvalid, ref, fmt.Sprintf("location %q is not a two-letter country code; ignored", v))
		return ""
	}
	return v
}
