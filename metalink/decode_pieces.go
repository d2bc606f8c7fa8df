package metalink

import (
	"encoding/xml"
	"fmt"
	"strconv"
	"strings"
)

// pieceState collects what is wrong with the hashes of one <pieces>, so
// that a million bad hashes give one problem each, not a million.
type pieceState struct {
	typed    bool   // some hash has a type attribute
	conflict string // ... and it differs from the pieces type
	ws       bool
	upper    bool
	attr     string // an unknown attribute on a hash
}

// pieces reads a <pieces> element; typ is its type, already mapped to an
// IANA name for Metalink 3.
func (d *decoder) pieces(t xml.StartElement, f *File, typ string) error {
	ref := elemRef{"pieces", len(f.Pieces) + 1, ""}
	p := Pieces{Type: typ}
	d.attrs(t, ref, func(n, v string) bool {
		switch n {
		case "type":
		case "length":
			p.Length = d.pieceLength(v, ref)
		default:
			return false
		}
		return true
	})
	var st pieceState
	hashRef := elemRef{name: ref.String() + "/hash"}
	err := d.children(d.ns(), nil, func(c xml.StartElement) error {
		if c.Name.Local != "hash" {
			d.warn(CodeUnknownElement, elemRef{name: ref.String() + "/" + c.Name.Local},
				"only <hash> is allowed in <pieces>; ignored")
			return d.skip()
		}
		return d.pieceHash(c, &p, &st, hashRef)
	})
	d.pieceProblems(st, p, ref)
	f.Pieces = append(f.Pieces, p)
	return err
}

func (d *decoder) ns() string {
	if d.v3 {
		return NamespaceV3
	}
	return Namespace
}

func (d *decoder) pieceLength(v string, ref elemRef) int64 {
	ref.attr = "length"
	n, err := strconv.ParseInt(d.trimmed(v, ref), 10, 64)
	if err != nil || n <= 0 {
		d.fail(CodePiecesLength, ref, fmt.Sprintf("length %q is not a positive integer below 2^63", v))
		return 0
	}
	return n
}

func (d *decoder) pieceHash(t xml.StartElement, p *Pieces, st *pieceState, ref elemRef) error {
	if d.pieceHashes >= d.lim.MaxPieceHashes {
		return d.limit(CodeLimitPieces, fmt.Sprintf("more than %d piece hashes", d.lim.MaxPieceHashes))
	}
	d.pieceHashes++
	for _, a := range t.Attr {
		switch {
		case a.Name.Space != "":
		case a.Name.Local == "type":
			st.typed = true
			if d.mapHashName(a.Value) != p.Type {
				st.conflict = a.Value
			}
		case !d.v3: // Metalink 3 numbers its pieces with piece="N"
			st.attr = a.Name.Local
		}
	}
	s, err := d.readText(ref)
	if err != nil {
		return err
	}
	v := strings.TrimSpace(s)
	st.ws = st.ws || len(v) != len(s)
	if lower, changed := lowerHex(v, p.Type); changed {
		v, st.upper = lower, true
	}
	p.Hashes = append(p.Hashes, v)
	return nil
}

func (d *decoder) mapHashName(s string) string {
	if d.v3 {
		return v3HashName(s)
	}
	return s
}

func (d *decoder) pieceProblems(st pieceState, p Pieces, ref elemRef) {
	switch {
	case st.conflict != "":
		d.fail(CodePieceHashType, ref, fmt.Sprintf("a piece <hash> has type %q but <pieces> has type %q", st.conflict, p.Type))
	case st.typed:
		d.warn(CodePieceHashType, ref, "piece <hash> elements have a type attribute (§4.2.4.1 MUST NOT); ignored")
	}
	if st.ws {
		d.warn(CodeWhitespace, ref, "whitespace around piece hashes removed")
	}
	if st.upper {
		d.warn(CodeHashUppercase, ref, "upper-case piece hashes lower-cased (§4.2.4)")
	}
	if st.attr != "" {
		d.warn(CodeUnknownAttribute, elemRef{ref.String() + "/hash", 0, st.attr}, "attribute not defined by RFC 5854, ignored")
	}
}

// extension reads a foreign element and everything in it.
func (d *decoder) extension(t xml.StartElement) (Extension, error) {
	e := Extension{Name: t.Name, Attrs: d.extAttrs(t)}
	var text strings.Builder
	for {
		tok, err := d.next()
		if err != nil {
			return e, err
		}
		switch v := tok.(type) {
		case xml.CharData:
			text.Write(v)
		case xml.StartElement:
			if !d.usableName(v.Name) {
				d.warn(CodeUnboundPrefix, elemRef{name: v.Name.Space + ":" + v.Name.Local},
					"element with an undeclared namespace prefix ignored")
				if err := d.skip(); err != nil {
					return e, err
				}
				continue
			}
			e.Children = flushText(e.Children, &text)
			c, err := d.extension(v)
			if err != nil {
				return e, err
			}
			e.Children = append(e.Children, c)
		case xml.EndElement:
			if e.Children == nil {
				e.Text = text.String()
			} else {
				e.Children = flushText(e.Children, &text)
			}
			return e, nil
		}
	}
}

// flushText keeps non-blank text found between child elements; blank text
// there is indentation and is dropped.
func flushText(kids []Extension, b *strings.Builder) []Extension {
	s := b.String()
	b.Reset()
	if strings.TrimSpace(s) == "" {
		return kids
	}
	return append(kids, Extension{Text: s})
}

func (d *decoder) extAttrs(t xml.StartElement) []xml.Attr {
	var out []xml.Attr
	for _, a := range t.Attr {
		switch {
		case isNSDecl(a.Name):
		case !d.usableName(a.Name):
			d.warn(CodeUnboundPrefix, elemRef{name: t.Name.Local, attr: a.Name.Space + ":" + a.Name.Local},
				"attribute with an undeclared namespace prefix ignored")
		default:
			out = append(out, a)
		}
	}
	return out
}
