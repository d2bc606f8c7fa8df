package trs

import (
	"bufio"
	"fmt"
	"io"
	"strings"
)

// Namespaces of the vocabulary a Tracked Resource Set uses.
const (
	NSTRS = "http://open-services.net/ns/core/trs#"
	NSLDP = "http://www.w3.org/ns/ldp#"
	NSRDF = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
	NSXSD = "http://www.w3.org/2001/XMLSchema#"
)

// Terms of the vocabulary.
const (
	rdfType = NSRDF + "type"
	rdfNil  = NSRDF + "nil"

	trsTrackedResourceSet = NSTRS + "TrackedResourceSet"
	trsBase               = NSTRS + "base"
	trsChangeLog          = NSTRS + "changeLog"
	trsChangeLogClass     = NSTRS + "ChangeLog"
	trsChange             = NSTRS + "change"
	trsPrevious           = NSTRS + "previous"
	trsChanged            = NSTRS + "changed"
	trsOrder              = NSTRS + "order"
	trsCutoffEvent        = NSTRS + "cutoffEvent"

	// The three kinds of Change Event.
	Creation     = NSTRS + "Creation"
	Modification = NSTRS + "Modification"
	Deletion     = NSTRS + "Deletion"

	ldpDirectContainer          = NSLDP + "DirectContainer"
	ldpMembershipResource       = NSLDP + "membershipResource"
	ldpHasMemberRelation        = NSLDP + "hasMemberRelation"
	ldpMember                   = NSLDP + "member"
	ldpPage                     = NSLDP + "Page"
	ldpPageOf                   = NSLDP + "pageOf"
	ldpNextPage                 = NSLDP + "nextPage"
	xsdInteger                  = NSXSD + "integer"
	xsdDecimal                  = NSXSD + "decimal"
	xsdDouble                   = NSXSD + "double"
	xsdBoolean                  = NSXSD + "boolean"
	mediaTurtle                 = "text/turtle"
	mediaRDFXML                 = "application/rdf+xml"
	turtleContentType           = mediaTurtle + "; charset=utf-8"
	rdfXMLContentType           = mediaRDFXML + "; charset=utf-8"
	maxDocument           int64 = 64 << 20 // the most a client reads of one TRS resource
)

// prefixes are those the serializers write, in this order.
var prefixes = []struct{ name, ns string }{
	{"trs", NSTRS}, {"ldp", NSLDP}, {"rdf", NSRDF}, {"xsd", NSXSD},
}

// TermKind says what a Term is.
type TermKind int

// The kinds of RDF term.
const (
	IRI TermKind = iota
	Blank
	Literal
)

// Term is an RDF term: an IRI, a blank node (Value is its label) or a
// literal (Value is its lexical form).
type Term struct {
	Kind     TermKind
	Value    string
	Datatype string // a literal's datatype IRI; "" is xsd:string
	Lang     string
}

// Triple is one RDF statement.
type Triple struct{ S, P, O Term }

func iri(s string) Term    { return Term{Kind: IRI, Value: s} }
func blank(s string) Term  { return Term{Kind: Blank, Value: s} }
func integer(n int64) Term { return Term{Kind: Literal, Value: fmt.Sprint(n), Datatype: xsdInteger} }
func (t Term) String() string {
	switch t.Kind {
	case Blank:
		return "_:" + t.Value
	case Literal:
		s := turtleString(t.Value)
		if t.Lang != "" {
			return s + "@" + t.Lang
		}
		if t.Datatype != "" {
			return s + "^^<" + t.Datatype + ">"
		}
		return s
	}
	return "<" + t.Value + ">"
}

// graph is the triples of one response, grouped by subject in the order
// they were added: the serializers write each subject once.
type graph struct {
	order []Term
	by    map[Term][]Triple
}

func newGraph() *graph { return &graph{by: map[Term][]Triple{}} }

func (g *graph) add(s, p, o Term) {
	if _, ok := g.by[s]; !ok {
		g.order = append(g.order, s)
	}
	g.by[s] = append(g.by[s], Triple{s, iri(p.Value), o})
}

// writeTurtle writes g as Turtle (W3C RDF 1.1 Turtle), one subject a
// block, with the prefixes of the vocabulary.
func (g *graph) writeTurtle(w io.Writer) error {
	bw := bufio.NewWriter(w)
	for _, p := range prefixes {
		fmt.Fprintf(bw, "@prefix %s: <%s> .\n", p.name, p.ns)
	}
	for _, s := range g.order {
		bw.WriteString("\n" + turtleTerm(s))
		for i, t := range g.by[s] {
			sep := " ;\n    "
			if i == 0 {
				sep = "\n    "
			}
			bw.WriteString(sep + turtlePredicate(t.P.Value) + " " + turtleTerm(t.O))
		}
		bw.WriteString(" .\n")
	}
	return bw.Flush()
}

func turtlePredicate(p string) string {
	if p == rdfType {
		return "a"
	}
	return turtleTerm(iri(p))
}

// turtleTerm writes a term, an IRI of the vocabulary as a prefixed name.
func turtleTerm(t Term) string {
	switch t.Kind {
	case Blank:
		return "_:" + t.Value
	case Literal:
		if t.Datatype == xsdInteger && isInteger(t.Value) {
			return t.Value
		}
		return t.String()
	}
	for _, p := range prefixes {
		if local, ok := strings.CutPrefix(t.Value, p.ns); ok && isLocalName(local) {
			return p.name + ":" + local
		}
	}
	return turtleIRI(t.Value)
}

// turtleIRI escapes what an IRIREF may not hold as \u escapes: the
// characters RDF 1.1 Turtle excludes (controls, space, <>"{}|^`\).
func turtleIRI(s string) string {
	var b strings.Builder
	b.WriteByte('<')
	for _, r := range s {
		if r <= 0x20 || strings.ContainsRune("<>\"{}|^`\\", r) {
			fmt.Fprintf(&b, "\\u%04X", r)
			continue
		}
		b.WriteRune(r)
	}
	b.WriteByte('>')
	return b.String()
}

func turtleString(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`, "\r", `\r`, "\t", `\t`)
	return `"` + r.Replace(s) + `"`
}

func isInteger(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// isLocalName is a conservative test for a PN_LOCAL: letters and digits.
func isLocalName(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			return false
		}
	}
	return true
}

// writeRDFXML writes g as RDF/XML (W3C RDF 1.1 XML Syntax): an
// rdf:Description a subject, a property element a triple.
func (g *graph) writeRDFXML(w io.Writer) error {
	bw := bufio.NewWriter(w)
	bw.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n<rdf:RDF")
	for _, p := range prefixes {
		fmt.Fprintf(bw, "\n    xmlns:%s=%q", p.name, p.ns)
	}
	bw.WriteString(">\n")
	for _, s := range g.order {
		if s.Kind == Blank {
			fmt.Fprintf(bw, "  <rdf:Description rdf:nodeID=\"%s\">\n", xmlAttr(s.Value))
		} else {
			fmt.Fprintf(bw, "  <rdf:Description rdf:about=\"%s\">\n", xmlAttr(s.Value))
		}
		for _, t := range g.by[s] {
			name, err := qname(t.P.Value)
			if err != nil {
				return err
			}
			switch t.O.Kind {
			case IRI:
				fmt.Fprintf(bw, "    <%s rdf:resource=\"%s\"/>\n", name, xmlAttr(t.O.Value))
			case Blank:
				fmt.Fprintf(bw, "    <%s rdf:nodeID=\"%s\"/>\n", name, xmlAttr(t.O.Value))
			default:
				attr := ""
				if t.O.Datatype != "" {
					attr = fmt.Sprintf(" rdf:datatype=\"%s\"", xmlAttr(t.O.Datatype))
				} else if t.O.Lang != "" {
					attr = fmt.Sprintf(" xml:lang=\"%s\"", xmlAttr(t.O.Lang))
				}
				fmt.Fprintf(bw, "    <%s%s>%s</%s>\n", name, attr, xmlText(t.O.Value), name)
			}
		}
		bw.WriteString("  </rdf:Description>\n")
	}
	bw.WriteString("</rdf:RDF>\n")
	return bw.Flush()
}

// qname is a predicate as an XML element name; only the vocabulary's
// predicates have one.
func qname(p string) (string, error) {
	for _, x := range prefixes {
		if local, ok := strings.CutPrefix(p, x.ns); ok && isLocalName(local) {
			return x.name + ":" + local, nil
		}
	}
	return "", fmt.Errorf("predicate %s has no RDF/XML name", p)
}

var (
	attrEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;", "\n", "&#xA;", "\r", "&#xD;", "\t", "&#x9;")
	textEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", "\r", "&#xD;")
)

func xmlAttr(s string) string { return attrEscaper.Replace(s) }
func xmlText(s string) string { return textEscaper.Replace(s) }
