package trs

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"
)

// ParseTurtle reads a Turtle document (W3C RDF 1.1 Turtle) into its
// triples; relative IRIs resolve against base. It takes the whole
// grammar a TRS server may write: @prefix/PREFIX, @base/BASE, prefixed
// names, 'a', predicate and object lists, blank node labels and property
// lists, collections, and string, numeric and boolean literals with
// their escapes, language tags and datatypes.
func ParseTurtle(doc []byte, base string) ([]Triple, error) {
	p := &turtleParser{s: string(doc), prefixes: map[string]string{}}
	if base != "" {
		u, err := url.Parse(base)
		if err != nil {
			return nil, fmt.Errorf("base %q: %w", base, err)
		}
		p.base = u
	}
	for {
		p.skipSpace()
		if p.pos >= len(p.s) {
			return p.out, nil
		}
		if err := p.statement(); err != nil {
			return nil, p.errAt(err)
		}
	}
}

type turtleParser struct {
	s        string
	pos      int
	base     *url.URL
	prefixes map[string]string
	out      []Triple
	blanks   int
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
	p.base = u
	if dot {
		return p.expect('.')
	}
	return nil
}

func (p *turtleParser) triples() error {
	var subj Term
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
func (p *turtleParser) subject() (Term, error) {
	switch p.peek() {
	case '_':
		return p.blankLabel()
	case '(':
		return p.collection()
	}
	return p.iri()
}

// iri reads an IRI, written <...> or as a prefixed name.
func (p *turtleParser) iri() (Term, error) {
	var s string
	var err error
	if p.peek() == '<' {
		s, err = p.iriRef()
	} else {
		s, err = p.prefixedName()
	}
	return iri(s), err
}

func (p *turtleParser) predicateObjectList(subj Term) error {
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
			p.out = append(p.out, Triple{subj, verb, obj})
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

func (p *turtleParser) verb() (Term, error) {
	p.skipSpace()
	if p.pos+1 <= len(p.s) && p.s[p.pos] == 'a' && (p.pos+1 == len(p.s) || !isNameChar(rune(p.s[p.pos+1])) && p.s[p.pos+1] != ':') {
		p.pos++
		return iri(rdfType), nil
	}
	return p.iri()
}

func (p *turtleParser) object() (Term, error) {
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
		return Term{Kind: Literal, Value: "true", Datatype: NSXSD + "boolean"}, nil
	case p.keyword("false", false):
		return Term{Kind: Literal, Value: "false", Datatype: NSXSD + "boolean"}, nil
	}
	return p.iri()
}

func (p *turtleParser) newBlank() Term {
	p.blanks++
	return blank(fmt.Sprintf("genid%d", p.blanks))
}

func (p *turtleParser) blankPropertyList() (Term, error) {
	p.pos++ // [
	b := p.newBlank()
	if p.peek() == ']' {
		p.pos++
		return b, nil
	}
	if err := p.predicateObjectList(b); err != nil {
		return b, err
	}
	return b, p.expect(']')
}

func (p *turtleParser) collection() (Term, error) {
	p.pos++ // (
	head := iri(rdfNil)
	var last Term
	for p.peek() != ')' {
		if p.peek() == 0 {
			return head, fmt.Errorf("unterminated collection")
		}
		o, err := p.object()
		if err != nil {
			return head, err
		}
		node := p.newBlank()
		if head.Value == rdfNil && head.Kind == IRI {
			head = node
		} else {
			p.out = append(p.out, Triple{last, iri(NSRDF + "rest"), node})
		}
		p.out = append(p.out, Triple{node, iri(NSRDF + "first"), o})
		last = node
	}
	p.pos++
	if head.Kind == Blank {
		p.out = append(p.out, Triple{last, iri(NSRDF + "rest"), iri(rdfNil)})
	}
	return head, nil
}

func (p *turtleParser) blankLabel() (Term, error) {
	if !strings.HasPrefix(p.s[p.pos:], "_:") {
		return Term{}, fmt.Errorf("expected a blank node label, found %s", p.near())
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
		return Term{}, fmt.Errorf("empty blank node label")
	}
	return blank("b_" + p.s[start:p.pos]), nil
}

// iriRef reads <...>, unescapes \u and \U, and resolves it against the
// base.
func (p *turtleParser) iriRef() (string, error) {
	if p.peek() != '<' {
		return "", fmt.Errorf("expected an IRI, found %s", p.near())
	}
	p.pos++
	var b strings.Builder
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
		case c <= 0x20 || strings.IndexByte("<\"{}|^`", c) >= 0:
			return "", fmt.Errorf("character %q not allowed in an IRI", c)
		default:
			b.WriteByte(c)
			p.pos++
		}
	}
}

func (p *turtleParser) resolve(s string) (string, error) {
	if p.base == nil {
		return s, nil
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

func (p *turtleParser) prefixedName() (string, error) {
	p.skipSpace()
	start := p.pos
	for p.pos < len(p.s) && p.s[p.pos] != ':' {
		r, n := utf8.DecodeRuneInString(p.s[p.pos:])
		if !isNameChar(r) && r != '.' {
			return "", fmt.Errorf("expected a term, found %s", p.near())
		}
		p.pos += n
	}
	if p.pos >= len(p.s) {
		return "", fmt.Errorf("expected a prefixed name, found the end")
	}
	prefix := p.s[start:p.pos]
	ns, ok := p.prefixes[prefix]
	if !ok {
		return "", fmt.Errorf("undeclared prefix %q", prefix)
	}
	p.pos++
	var local strings.Builder
	for p.pos < len(p.s) {
		c := p.s[p.pos]
		switch {
		case c == '\\' && p.pos+1 < len(p.s):
			local.WriteByte(p.s[p.pos+1])
			p.pos += 2
			continue
		case c == '%' || c == ':' || c == '.':
		default:
			r, _ := utf8.DecodeRuneInString(p.s[p.pos:])
			if !isNameChar(r) {
				return ns + p.fixDots(local.String()), nil
			}
		}
		r, n := utf8.DecodeRuneInString(p.s[p.pos:])
		local.WriteRune(r)
		p.pos += n
	}
	return ns + p.fixDots(local.String()), nil
}

// fixDots puts back the dots a prefixed name may not end with.
func (p *turtleParser) fixDots(name string) string {
	for strings.HasSuffix(name, ".") {
		name = name[:len(name)-1]
		p.pos--
	}
	return name
}

func isNameChar(r rune) bool {
	return r == '_' || r == '-' || r == 0xB7 || '0' <= r && r <= '9' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || r >= 0xC0 && r != 0xD7 && r != 0xF7 && r < 0xFFFE
}

func (p *turtleParser) literal() (Term, error) {
	q := p.s[p.pos]
	long := strings.HasPrefix(p.s[p.pos:], strings.Repeat(string(q), 3))
	if long {
		p.pos += 3
	} else {
		p.pos++
	}
	var b strings.Builder
	for {
		if p.pos >= len(p.s) {
			return Term{}, fmt.Errorf("unterminated string")
		}
		c := p.s[p.pos]
		switch {
		case long && strings.HasPrefix(p.s[p.pos:], strings.Repeat(string(q), 3)) && !strings.HasPrefix(p.s[p.pos+1:], strings.Repeat(string(q), 3)):
			p.pos += 3
			return p.literalEnd(b.String())
		case !long && c == q:
			p.pos++
			return p.literalEnd(b.String())
		case !long && (c == '\n' || c == '\r'):
			return Term{}, fmt.Errorf("line break in a short string")
		case c == '\\':
			if p.pos+1 >= len(p.s) {
				return Term{}, fmt.Errorf("bad escape")
			}
			if e := p.s[p.pos+1]; e == 'u' || e == 'U' {
				r, err := p.uchar()
				if err != nil {
					return Term{}, err
				}
				b.WriteRune(r)
				continue
			}
			r, ok := map[byte]string{'t': "\t", 'b': "\b", 'n': "\n", 'r': "\r", 'f': "\f", '"': `"`, '\'': "'", '\\': `\`}[p.s[p.pos+1]]
			if !ok {
				return Term{}, fmt.Errorf("bad escape \\%c", p.s[p.pos+1])
			}
			b.WriteString(r)
			p.pos += 2
		default:
			b.WriteByte(c)
			p.pos++
		}
	}
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
		t.Datatype = dt.Value
	}
	return t, nil
}

func (p *turtleParser) number() (Term, error) {
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
		dt = NSXSD + "decimal"
	}
	if p.pos < len(p.s) && (p.s[p.pos] == 'e' || p.s[p.pos] == 'E') {
		p.pos++
		if p.pos < len(p.s) && (p.s[p.pos] == '+' || p.s[p.pos] == '-') {
			p.pos++
		}
		if digits() == 0 {
			return Term{}, fmt.Errorf("bad exponent")
		}
		dt = NSXSD + "double"
	}
	if intDigits == 0 && dt == xsdInteger {
		return Term{}, fmt.Errorf("expected a term, found %s", strconv.Quote(p.s[start:min(start+20, len(p.s))]))
	}
	return Term{Kind: Literal, Value: p.s[start:p.pos], Datatype: dt}, nil
}
