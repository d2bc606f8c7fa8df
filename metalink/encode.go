package metalink

import (
	"bufio"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/rsdump/rsdump/finding"
)

// Encode writes m as a Metalink 4 document: UTF-8, two-space indentation,
// the Metalink namespace declared once as the default namespace on the
// root, no empty attributes, dates in RFC 3339 UTC with "Z", and a fixed
// element order, so equal models give equal bytes. Text is written
// verbatim, never indented, because whitespace is content (§2).
//
// Encode refuses a model that Validate reports errors for: such a
// document would be unsafe for its readers or invalid against the schema.
// Nothing is written in that case.
func Encode(w io.Writer, m *Metalink) error {
	if m == nil {
		return errors.New("metalink: nil document")
	}
	if err := finding.Err("metalink: ", m.Validate()); err != nil {
		return fmt.Errorf("metalink: refusing to encode: %w", err)
	}
	x := &xmlWriter{w: bufio.NewWriter(w)}
	x.document(m)
	if x.err != nil {
		return x.err
	}
	return x.w.Flush()
}

type xmlWriter struct {
	w   *bufio.Writer
	err error
}

type attr struct{ name, value string }

func (x *xmlWriter) document(m *Metalink) {
	x.raw(`<?xml version="1.0" encoding="UTF-8"?>` + "\n")
	x.open(0, "metalink", attr{"xmlns", Namespace})
	x.leaf(1, "generator", m.Generator)
	if m.Origin != "" {
		x.leaf(1, "origin", m.Origin, attr{"dynamic", formatBool(m.Dynamic)})
	}
	x.leaf(1, "published", formatDate(m.Published))
	x.leaf(1, "updated", formatDate(m.Updated))
	for i := range m.Files {
		x.file(&m.Files[i])
	}
	x.extensions(1, m.Extensions)
	x.close(0, "metalink")
}

func (x *xmlWriter) file(f *File) {
	x.open(1, "file", attr{"name", f.Name})
	x.leaf(2, "identity", f.Identity)
	x.leaf(2, "version", f.Version)
	x.leaf(2, "description", f.Description)
	x.leaf(2, "copyright", f.Copyright)
	for _, l := range f.Languages {
		x.element(2, "language", l)
	}
	for _, o := range f.OS {
		x.element(2, "os", o)
	}
	x.leaf(2, "logo", f.Logo)
	if p := f.Publisher; p != nil {
		x.indent(2)
		x.raw("<publisher")
		x.attrs(attr{"name", p.Name}, attr{"url", p.URL})
		x.raw("/>\n")
	}
	if f.Size != nil {
		x.leaf(2, "size", strconv.FormatInt(*f.Size, 10))
	}
	for _, h := range f.Hashes {
		x.element(2, "hash", h.Value, attr{"type", h.Type})
	}
	for _, p := range f.Pieces {
		x.open(2, "pieces", attr{"length", strconv.FormatInt(p.Length, 10)}, attr{"type", p.Type})
		for _, h := range p.Hashes {
			x.element(3, "hash", h)
		}
		x.close(2, "pieces")
	}
	for _, u := range f.URLs {
		x.element(2, "url", u.URL, attr{"location", u.Location}, attr{"priority", formatPriority(u.Priority)})
	}
	for _, u := range f.MetaURLs {
		x.element(2, "metaurl", u.URL, attr{"mediatype", u.MediaType}, attr{"name", u.Name},
			attr{"priority", formatPriority(u.Priority)})
	}
	if s := f.Signature; s != nil {
		x.element(2, "signature", s.Value, attr{"mediatype", s.MediaType})
	}
	x.extensions(2, f.Extensions)
	x.close(1, "file")
}

func formatBool(b *bool) string {
	if b == nil {
		return ""
	}
	return strconv.FormatBool(*b)
}

func formatDate(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

func formatPriority(p int) string {
	if p == 0 {
		return ""
	}
	return strconv.Itoa(p)
}

func (x *xmlWriter) raw(s string) {
	if x.err == nil {
		_, x.err = x.w.WriteString(s)
	}
}

func (x *xmlWriter) indent(depth int) { x.raw(strings.Repeat("  ", depth)) }

// attrs writes the attributes that have a value: an empty attribute is
// never meaningful in Metalink and the schema rejects several.
func (x *xmlWriter) attrs(as ...attr) {
	for _, a := range as {
		if a.value != "" {
			x.raw(" " + a.name + `="`)
			x.escape(a.value, true)
			x.raw(`"`)
		}
	}
}

func (x *xmlWriter) open(depth int, name string, as ...attr) {
	x.indent(depth)
	x.raw("<" + name)
	x.attrs(as...)
	x.raw(">\n")
}

func (x *xmlWriter) close(depth int, name string) {
	x.indent(depth)
	x.raw("</" + name + ">\n")
}

// leaf writes an optional element: nothing when text is empty.
func (x *xmlWriter) leaf(depth int, name, text string, as ...attr) {
	if text != "" {
		x.element(depth, name, text, as...)
	}
}

func (x *xmlWriter) element(depth int, name, text string, as ...attr) {
	x.indent(depth)
	x.raw("<" + name)
	x.attrs(as...)
	x.raw(">")
	x.escape(text, false)
	x.raw("</" + name + ">\n")
}

// escape writes s as character data or an attribute value. Carriage
// returns, and in attributes tabs and newlines, become character
// references, since XML parsers would otherwise normalise them away.
func (x *xmlWriter) escape(s string, inAttr bool) {
	if !isXMLText(s) {
		x.fail(errors.New("metalink: a string contains a character XML 1.0 cannot represent"))
		return
	}
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '&':
			b.WriteString("&amp;")
		case r == '<':
			b.WriteString("&lt;")
		case r == '>':
			b.WriteString("&gt;")
		case r == '"' && inAttr:
			b.WriteString("&quot;")
		case r == '\r' || inAttr && (r == '\n' || r == '\t'):
			fmt.Fprintf(&b, "&#x%X;", r)
		default:
			b.WriteRune(r)
		}
	}
	x.raw(b.String())
}

func (x *xmlWriter) fail(err error) {
	if x.err == nil {
		x.err = err
	}
}

// extensions writes foreign elements, each on its own line, with their
// content exactly as stored.
func (x *xmlWriter) extensions(depth int, es []Extension) {
	for _, e := range es {
		x.indent(depth)
		x.extension(e, Namespace)
		x.raw("\n")
	}
}

// extension writes e with its namespace as the default namespace when it
// differs from the parent's, so that no prefix is ever needed for element
// names. Namespaced attributes get prefixes declared on the element.
func (x *xmlWriter) extension(e Extension, parentNS string) {
	if e.Name.Local == "" {
		x.escape(e.Text, false)
		return
	}
	x.raw("<" + e.Name.Local)
	if e.Name.Space != parentNS {
		x.attrs(attr{"xmlns", e.Name.Space})
		if e.Name.Space == "" {
			x.raw(` xmlns=""`)
		}
	}
	x.extAttrs(e.Attrs)
	x.raw(">")
	if len(e.Children) == 0 {
		x.escape(e.Text, false)
	}
	for _, c := range e.Children {
		x.extension(c, e.Name.Space)
	}
	x.raw("</" + e.Name.Local + ">")
}

func (x *xmlWriter) extAttrs(as []xml.Attr) {
	prefixes := map[string]string{}
	for _, a := range as {
		name := a.Name.Local
		switch a.Name.Space {
		case "":
		case xmlNamespace:
			name = "xml:" + name
		default:
			p, ok := prefixes[a.Name.Space]
			if !ok {
				p = "ns" + strconv.Itoa(len(prefixes)+1)
				prefixes[a.Name.Space] = p
				x.raw(" xmlns:" + p + `="`)
				x.escape(a.Name.Space, true)
				x.raw(`"`)
			}
			name = p + ":" + name
		}
		x.raw(" " + name + `="`)
		x.escape(a.Value, true)
		x.raw(`"`)
	}
}
