package trs

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"
	"unsafe"
)

// ParseTurtle reads a Turtle document (W3C RDF 1.1 Turtle) into its
// triples; relative IRIs resolve against base. It takes the whole
// grammar a TRS server may write: @prefix/PREFIX, @base/BASE, prefixed
// names, 'a', predicate and object lists, blank node labels and property
// lists, collections, and string, numeric and boolean literals with
// their escapes, language tags and datatypes. A document is network
// input: one that nests deeper than MaxNesting, or whose triples would
// take more memory than a few times its size (ErrTooLarge, counting
// them as the client holds them), is an error, never a crash.
func ParseTurtle(doc []byte, base string) ([]Triple, error) {
	g, err := parseTurtle(string(doc), base)
	if err != nil {
		return nil, err
	}
	if int64(g.added.n)*int64(unsafe.Sizeof(Triple{})) > g.budget {
		return nil, fmt.Errorf("turtle: %w as []Triple (%d triples)", ErrTooLarge, g.added.n)
	}
	return g.Triples(), nil
}

// parseTurtle reads doc into a docGraph, within its budget.
func parseTurtle(doc, base string) (*docGraph, error) {
	p := &turtleParser{s: doc, prefixes: map[string]string{}, g: newDocGraph(doc)}
	if base != "" {
		u, err := url.Parse(base)
		if err != nil {
			return nil, fmt.Errorf("base %q: %w", base, err)
		}
		p.setBase(u)
	}
	var err error
	if p.first, err = p.g.iri(NSRDF + "first"); err == nil {
		p.rest, err = p.g.iri(NSRDF + "rest")
	}
	if err == nil {
		p.nil, err = p.g.iri(rdfNil)
	}
	if err == nil {
		p.typ, err = p.g.iri(rdfType)
	}
	if err != nil {
		return nil, err
	}
	for {
		p.skipSpace()
		if p.pos >= len(p.s) {
			return p.g, nil
		}
		if err := p.statement(); err != nil {
			return nil, p.errAt(err)
		}
	}
}

// turtleParser is a recursive descent parser whose recursion (blank node
// property lists and collections) is bounded by MaxNesting.
type turtleParser struct {
	s        string
	pos      int
	base     *url.URL
	baseDir  string // what a reference of one plain segment resolves after
	prefixes map[string]string
	g        *docGraph
	depth    int
	buf      []byte // a prefixed name spelled out
	// The nodes of the IRIs the grammar itself produces.
	first, rest, nil, typ node
}

func (p *turtleParser) errAt(err error) error {
	line := 1 + strings.Count(p.s[:min(p.pos, len(p.s))], "\n")
	return fmt.Errorf("turtle: line %d: %w", line, err)
}

func (p *turtleParser) skipSpace() {
	for p.pos < len(p.s) {
		switch c := p.s[p.pos]; {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			p.pos++
		case c == '#':
			for p.pos < len(p.s) && p.s[p.pos] != '\n' && p.s[p.pos] != '\r' {
				p.pos++
			}
		default:
			return
		}
	}
}

func (p *turtleParser) peek() byte {
	p.skipSpace()
	if p.pos >= len(p.s) {
		return 0
	}
	return p.s[p.pos]
}

func (p *turtleParser) expect(c byte) error {
	if p.peek() != c {
		return fmt.Errorf("expected %q, found %s", c, p.near())
	}
	p.pos++
	return nil
}

func (p *turtleParser) near() string {
	if p.pos >= len(p.s) {
		return "the end"
	}
	end := min(p.pos+20, len(p.s))
	return strconv.Quote(p.s[p.pos:end])
}

// keyword reports whether the input continues with word (case-insensitive
// for SPARQL-style directives) followed by a non-name character.
func (p *turtleParser) keyword(word string, fold bool) bool {
	p.skipSpace()
	end := p.pos + len(word)
	if end > len(p.s) {
		return false
	}
	got := p.s[p.pos:end]
	if !(got == word || fold && strings.EqualFold(got, word)) {
		return false
	}
	if end < len(p.s) && isNameChar(rune(p.s[end])) {
		return false
	}
	p.pos = end
	return true
}

func (p *turtleParser) statement() error {
	switch {
	case p.keyword("@prefix", false):
		return p.prefix(true)
	case p.keyword("@base", false):
		return p.baseDirective(true)
	case p.keyword("PREFIX", true):
		return p.prefix(false)
	case p.keyword("BASE", true):
		return p.baseDirective(false)
	}
	return p.triples()
}

func (p *turtleParser) prefix(dot bool) error {
	p.skipSpace()
	start := p.pos
	for p.pos < len(p.s) && p.s[p.pos] != ':' {
		if !isNameChar(rune(p.s[p.pos])) {
			return fmt.Errorf("bad prefix name near %s", p.near())
		}
		p.pos++
	}
	if p.pos >= len(p.s) {
		return fmt.Errorf("unterminated prefix")
	}
	name := p.s[start:p.pos]
	p.pos++
	ns, err := p.iriRef()
	if err != nil {
		return err
	}
	p.prefixes[name] = ns
	if dot {
		return p.expect('.')
	}
	return nil
}

func (p *turtleParser) baseDirective(dot bool) error {
	b, err := p.iriRef()
	if err != nil {
		return err
	}
	u, err := url.Parse(b)
	if err != nil {
		return err
	}
	p.setBase(u)
	if dot {
		return p.expect('.')
	}
	return nil
}

func (p *turtleParser) triples() error {
	var subj node
	var err error
	if p.peek() == '[' {
		subj, err = p.blankPropertyList()
		if err != nil {
			return err
		}
		if p.peek() == '.' {
			p.pos++
			return nil
		}
	} else if subj, err = p.subject(); err != nil {
		return err
	}
	if err := p.predicateObjectList(subj); err != nil {
		return err
	}
	return p.expect('.')
}

// subject reads a subject: an IRI, a blank node label or a collection.
func (p *turtleParser) subject() (node, error) {
	switch p.peek() {
	case '_':
		return p.blankLabel()
	case '(':
		return p.collection()
	}
	return p.iri()
}

// iri reads an IRI, written <...> or as a prefixed name.
func (p *turtleParser) iri() (node, error) {
	if p.peek() != '<' {
		return p.prefixedName()
	}
	s, err := p.iriRef()
	if err != nil {
		return noNode, err
	}
	return p.g.iri(s)
}

func (p *turtleParser) predicateObjectList(subj node) error {
	for {
		verb, err := p.verb()
		if err != nil {
			return err
		}
		for {
			obj, err := p.object()
			if err != nil {
				return err
			}
			if err := p.g.add(subj, verb, obj); err != nil {
				return err
			}
			if p.peek() != ',' {
				break
			}
			p.pos++
		}
		if p.peek() != ';' {
			return nil
		}
		for p.peek() == ';' {
			p.pos++
		}
		if c := p.peek(); c == '.' || c == ']' || c == 0 {
			return nil
		}
	}
}

func (p *turtleParser) verb() (node, error) {
	p.skipSpace()
	if p.pos+1 <= len(p.s) && p.s[p.pos] == 'a' && (p.pos+1 == len(p.s) || !isNameChar(rune(p.s[p.pos+1])) && p.s[p.pos+1] != ':') {
		p.pos++
		return p.typ, nil
	}
	return p.iri()
}

func (p *turtleParser) object() (node, error) {
	switch c := p.peek(); {
	case c == '_' || c == '(' || c == '<':
		return p.subject()
	case c == '[':
		return p.blankPropertyList()
	case c == '"' || c == '\'':
		return p.literal()
	case c == '+' || c == '-' || c == '.' || c >= '0' && c <= '9':
		return p.number()
	case p.keyword("true", false):
		return p.g.literal(Term{Kind: Literal, Value: "true", Datatype: xsdBoolean})
	case p.keyword("false", false):
		return p.g.literal(Term{Kind: Literal, Value: "false", Datatype: xsdBoolean})
	}
	return p.iri()
}

// nest enters a blank node property list or a collection, refusing one
// deeper than MaxNesting; leave undoes it.
func (p *turtleParser) nest() error {
	p.depth++
	if p.depth > MaxNesting {
		return fmt.Errorf("blank node property lists and collections nested deeper than %d", MaxNesting)
	}
	return nil
}

func (p *turtleParser) leave() { p.depth-- }

func (p *turtleParser) blankPropertyList() (node, error) {
	if err := p.nest(); err != nil {
		return noNode, err
	}
	defer p.leave()
	p.pos++ // [
	b := p.g.genid()
	if p.peek() == ']' {
		p.pos++
		return b, nil
	}
	if err := p.predicateObjectList(b); err != nil {
		return b, err
	}
	return b, p.expect(']')
}

// collection reads ( ... ) as an RDF list: a blank node an item, each
// with its rdf:first and rdf:rest; rdf:nil when empty.
func (p *turtleParser) collection() (node, error) {
	if err := p.nest(); err != nil {
		return noNode, err
	}
	defer p.leave()
	p.pos++ // (
	head, last := p.nil, noNode
	for p.peek() != ')' {
		if p.peek() == 0 {
			return head, fmt.Errorf("unterminated collection")
		}
		o, err := p.object()
		if err != nil {
			return head, err
		}
		item := p.g.genid()
		if last == noNode {
			head = item
		} else if err := p.g.add(last, p.rest, item); err != nil {
			return head, err
		}
		if err := p.g.add(item, p.first, o); err != nil {
			return head, err
		}
		last = item
	}
	p.pos++
	if last != noNode {
		return head, p.g.add(last, p.rest, p.nil)
	}
	return head, nil
}

func (p *turtleParser) blankLabel() (node, error) {
	if !strings.HasPrefix(p.s[p.pos:], "_:") {
		return noNode, fmt.Errorf("expected a blank node label, found %s", p.near())
	}
	p.pos += 2
	start := p.pos
	for p.pos < len(p.s) {
		r, n := utf8.DecodeRuneInString(p.s[p.pos:])
		if !isNameChar(r) && r != '.' {
			break
		}
		p.pos += n
	}
	for p.pos > start && p.s[p.pos-1] == '.' {
		p.pos--
	}
	if p.pos == start {
		return noNode, fmt.Errorf("empty blank node label")
	}
	return p.g.label(p.s[start:p.pos])
}

// iriRef reads <...>, unescapes \u and \U, and resolves it against the
// base.
func (p *turtleParser) iriRef() (string, error) {
	if p.peek() != '<' {
		return "", fmt.Errorf("expected an IRI, found %s", p.near())
	}
	p.pos++
	// An IRI without escapes is a substring of the document: no copy.
	start := p.pos
	for p.pos < len(p.s) && p.s[p.pos] != '>' && p.s[p.pos] != '\\' && !badIRIByte(p.s[p.pos]) {
		p.pos++
	}
	if p.pos < len(p.s) && p.s[p.pos] == '>' {
		p.pos++
		return p.resolve(p.s[start : p.pos-1])
	}
	var b strings.Builder
	b.WriteString(p.s[start:p.pos])
	for {
		if p.pos >= len(p.s) {
			return "", fmt.Errorf("unterminated IRI")
		}
		c := p.s[p.pos]
		switch {
		case c == '>':
			p.pos++
			return p.resolve(b.String())
		case c == '\\':
			r, err := p.uchar()
			if err != nil {
				return "", err
			}
			b.WriteRune(r)
		case badIRIByte(c):
			return "", fmt.Errorf("character %q not allowed in an IRI", c)
		default:
			b.WriteByte(c)
			p.pos++
		}
	}
}

// hasScheme says whether s begins with a URI scheme and its colon
// (RFC 3986 §3.1): an absolute IRI, which no base changes.
func hasScheme(s string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z':
		case i > 0 && ('0' <= c && c <= '9' || c == '+' || c == '-' || c == '.'):
		case i > 0 && c == ':':
			return true
		default:
			return false
		}
	}
	return false
}

// plainSegment says whether s is a relative reference of one path
// segment of letters, digits, '-', '_' and '~' (not dot segments, nothing
// to escape): it resolves to the base's directory followed by it.
func plainSegment(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '~') {
			return false
		}
	}
	return s != ""
}

// badIRIByte is a byte an IRIREF may not hold unescaped.
func badIRIByte(c byte) bool { return c <= 0x20 || strings.IndexByte("<\"{}|^`", c) >= 0 }

func (p *turtleParser) setBase(u *url.URL) {
	p.base = u
	p.baseDir = strings.TrimSuffix(u.ResolveReference(&url.URL{Path: "x"}).String(), "x")
}

func (p *turtleParser) resolve(s string) (string, error) {
	switch {
	case p.base == nil || hasScheme(s):
		return s, nil // absolute: as it is, with no parse
	case plainSegment(s):
		return p.baseDir + s, nil // what ResolveReference gives, with no parse
	}
	u, err := url.Parse(s)
	if err != nil {
		return "", fmt.Errorf("IRI %q: %w", s, err)
	}
	if u.IsAbs() {
		return s, nil
	}
	return p.base.ResolveReference(u).String(), nil
}

// uchar reads \uXXXX or \UXXXXXXXX at pos.
func (p *turtleParser) uchar() (rune, error) {
	if p.pos+1 >= len(p.s) {
		return 0, fmt.Errorf("bad escape")
	}
	n := 0
	switch p.s[p.pos+1] {
	case 'u':
		n = 4
	case 'U':
		n = 8
	default:
		return 0, fmt.Errorf("bad escape \\%c", p.s[p.pos+1])
	}
	if p.pos+2+n > len(p.s) {
		return 0, fmt.Errorf("short escape")
	}
	v, err := strconv.ParseUint(p.s[p.pos+2:p.pos+2+n], 16, 32)
	if err != nil {
		return 0, fmt.Errorf("bad escape %q", p.s[p.pos:p.pos+2+n])
	}
	p.pos += 2 + n
	return rune(v), nil
}

// prefixedName reads a prefixed name as the IRI it stands for. It is
// spelled out in a buffer of the parser's, so that a name the document
// used before takes no memory again.
func (p *turtleParser) prefixedName() (node, error) {
	p.skipSpace()
	start := p.pos
	for p.pos < len(p.s) && p.s[p.pos] != ':' {
		r, n := utf8.DecodeRuneInString(p.s[p.pos:])
		if !isNameChar(r) && r != '.' {
			return noNode, fmt.Errorf("expected a term, found %s", p.near())
		}
		p.pos += n
	}
	if p.pos >= len(p.s) {
		return noNode, fmt.Errorf("expected a prefixed name, found the end")
	}
	prefix := p.s[start:p.pos]
	ns, ok := p.prefixes[prefix]
	if !ok {
		return noNode, fmt.Errorf("undeclared prefix %q", prefix)
	}
	p.pos++
	p.buf = append(p.buf[:0], ns...)
	for p.pos < len(p.s) {
		c := p.s[p.pos]
		switch {
		case c == '\\' && p.pos+1 < len(p.s):
			p.buf = append(p.buf, p.s[p.pos+1])
			p.pos += 2
			continue
		case c == '%' || c == ':' || c == '.':
		default:
			r, _ := utf8.DecodeRuneInString(p.s[p.pos:])
			if !isNameChar(r) {
				return p.g.iriBytes(p.fixDots(p.buf, len(ns)))
			}
		}
		_, n := utf8.DecodeRuneInString(p.s[p.pos:])
		p.buf = append(p.buf, p.s[p.pos:p.pos+n]...)
		p.pos += n
	}
	return p.g.iriBytes(p.fixDots(p.buf, len(ns)))
}

// fixDots puts back the dots a prefixed name may not end with: those
// that end name past its namespace's ns bytes.
func (p *turtleParser) fixDots(name []byte, ns int) []byte {
	for len(name) > ns && name[len(name)-1] == '.' {
		name = name[:len(name)-1]
		p.pos--
	}
	return name
}

func isNameChar(r rune) bool {
	return r == '_' || r == '-' || r == 0xB7 || '0' <= r && r <= '9' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || r >= 0xC0 && r != 0xD7 && r != 0xF7 && r < 0xFFFE
}

func (p *turtleParser) literal() (node, error) {
	t, err := p.literalTerm()
	if err != nil {
		return noNode, err
	}
	return p.g.literal(t)
}

func (p *turtleParser) literalTerm() (Term, error) {
	q := p.s[p.pos]
	q3 := strings.Repeat(string(q), 3)
	long := strings.HasPrefix(p.s[p.pos:], q3)
	if long {
		p.pos += 3
	} else {
		p.pos++
		// A short string without escapes is a substring: no copy.
		end := p.pos
		for end < len(p.s) && p.s[end] != q && p.s[end] != '\\' && p.s[end] != '\n' && p.s[end] != '\r' {
			end++
		}
		if end < len(p.s) && p.s[end] == q {
			v := p.s[p.pos:end]
			p.pos = end + 1
			return p.literalEnd(v)
		}
	}
	var b strings.Builder
	for {
		if p.pos >= len(p.s) {
			return Term{}, fmt.Errorf("unterminated string")
		}
		c := p.s[p.pos]
		switch {
		case long && strings.HasPrefix(p.s[p.pos:], q3) && !strings.HasPrefix(p.s[p.pos+1:], q3):
			p.pos += 3
			return p.literalEnd(b.String())
		case !long && c == q:
			p.pos++
			return p.literalEnd(b.String())
		case !long && (c == '\n' || c == '\r'):
			return Term{}, fmt.Errorf("line break in a short string")
		case c == '\\':
			r, err := p.escape()
			if err != nil {
				return Term{}, err
			}
			b.WriteRune(r)
		default:
			b.WriteByte(c)
			p.pos++
		}
	}
}

// escape reads a string's escape at pos: \uXXXX, \UXXXXXXXX or one of
// \t \b \n \r \f \" \' \\.
func (p *turtleParser) escape() (rune, error) {
	if p.pos+1 >= len(p.s) {
		return 0, fmt.Errorf("bad escape")
	}
	var r rune
	switch e := p.s[p.pos+1]; e {
	case 'u', 'U':
		return p.uchar()
	case 't':
		r = '\t'
	case 'b':
		r = '\b'
	case 'n':
		r = '\n'
	case 'r':
		r = '\r'
	case 'f':
		r = '\f'
	case '"', '\'', '\\':
		r = rune(e)
	default:
		return 0, fmt.Errorf("bad escape \\%c", e)
	}
	p.pos += 2
	return r, nil
}

func (p *turtleParser) literalEnd(v string) (Term, error) {
	t := Term{Kind: Literal, Value: v}
	switch {
	case strings.HasPrefix(p.s[p.pos:], "@"):
		p.pos++
		start := p.pos
		for p.pos < len(p.s) && (isNameChar(rune(p.s[p.pos])) && p.s[p.pos] != '_') {
			p.pos++
		}
		t.Lang = p.s[start:p.pos]
	case strings.HasPrefix(p.s[p.pos:], "^^"):
		p.pos += 2
		dt, err := p.iri()
		if err != nil {
			return t, err
		}
		t.Datatype = p.g.value(dt) // the string the graph holds once
	}
	return t, nil
}

func (p *turtleParser) number() (node, error) {
	t, err := p.numberTerm()
	if err != nil {
		return noNode, err
	}
	return p.g.literal(t)
}

func (p *turtleParser) numberTerm() (Term, error) {
	start := p.pos
	if c := p.s[p.pos]; c == '+' || c == '-' {
		p.pos++
	}
	digits := func() int {
		n := 0
		for p.pos < len(p.s) && p.s[p.pos] >= '0' && p.s[p.pos] <= '9' {
			p.pos++
			n++
		}
		return n
	}
	dt := xsdInteger
	intDigits := digits()
	if p.pos+1 < len(p.s) && p.s[p.pos] == '.' && p.s[p.pos+1] >= '0' && p.s[p.pos+1] <= '9' {
		p.pos++
		digits()
		dt = xsdDecimal
	}
	if p.pos < len(p.s) && (p.s[p.pos] == 'e' || p.s[p.pos] == 'E') {
		p.pos++
		if p.pos < len(p.s) && (p.s[p.pos] == '+' || p.s[p.pos] == '-') {
			p.pos++
		}
		if digits() == 0 {
			return Term{}, fmt.Errorf("bad exponent")
		}
		dt = xsdDouble
	}
	if intDigits == 0 && dt == xsdInteger {
		return Term{}, fmt.Errorf("expected a term, found %s", strconv.Quote(p.s[start:min(start+20, len(p.s))]))
	}
	return Term{Kind: Literal, Value: p.s[start:p.pos], Datatype: dt}, nil
}
