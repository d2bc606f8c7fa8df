package metalink

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/rsdump/rsdump/finding"
)

// Limits bound the work Decode does, so that a hostile document cannot
// exhaust memory: memory stays proportional to the bytes read, and the
// bytes read are capped. A zero field takes its value from DefaultLimits.
type Limits struct {
	MaxBytes       int64 // whole document
	MaxTokenBytes  int   // longest run of bytes without '<' (a text, tag or comment)
	MaxFiles       int
	MaxPieceHashes int // piece hashes in the whole document
	MaxDepth       int // element nesting
}

// DefaultLimits admit a 1 GiB document with a million files or ten
// million piece hashes (a 2.4 TiB file at 256 KiB pieces).
func DefaultLimits() Limits {
	return Limits{
		MaxBytes:       1 << 30,
		MaxTokenBytes:  1 << 20,
		MaxFiles:       1_000_000,
		MaxPieceHashes: 10_000_000,
		MaxDepth:       64,
	}
}

func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	if l.MaxBytes > 0 {
		d.MaxBytes = l.MaxBytes
	}
	if l.MaxTokenBytes > 0 {
		d.MaxTokenBytes = l.MaxTokenBytes
	}
	if l.MaxFiles > 0 {
		d.MaxFiles = l.MaxFiles
	}
	if l.MaxPieceHashes > 0 {
		d.MaxPieceHashes = l.MaxPieceHashes
	}
	if l.MaxDepth > 0 {
		d.MaxDepth = l.MaxDepth
	}
	return d
}

// Decode reads a Metalink 4 or Metalink 3 document with DefaultLimits.
// See DecodeLimits.
func Decode(r io.Reader) (*Metalink, []finding.Finding, error) {
	return DecodeLimits(r, Limits{})
}

// DecodeLimits reads a document, validates it, and returns it with every
// finding, in document order. When the document cannot be read at all,
// the Metalink is nil and the error wraps a *finding.Finding (code
// CodeRead, CodeSyntax, CodeNotMetalink or CodeLimit*). Otherwise the
// error is finding.Err of the findings: non-nil when the document is unsafe
// or unusable, in which case the Metalink is still returned so that a
// caller can report on it, but must not act on it.
func DecodeLimits(r io.Reader, lim Limits) (*Metalink, []finding.Finding, error) {
	d := newDecoder(r, lim.withDefaults())
	m, err := d.document()
	if err != nil {
		return nil, d.sink.done(), fmt.Errorf("metalink: %w", err)
	}
	ps := mergeProblems(d.sink.done(), m.Validate())
	return m, ps, finding.Err("metalink: ", ps)
}

type decoder struct {
	x   *xml.Decoder
	src *limitReader
	lim Limits

	sink sink

	// Namespace bookkeeping to detect unbound prefixes, which
	// encoding/xml leaves untranslated instead of rejecting.
	depth     int
	declCount []int
	declURIs  []string
	bound     map[string]int

	pieceHashes int

	// Current file, for locating problems.
	fileIdx  int
	fileName string

	v3        bool            // reading Metalink 3
	v3dropped map[string]bool // Metalink 3 names already warned about
}

func newDecoder(r io.Reader, lim Limits) *decoder {
	src := &limitReader{r: r, max: lim.MaxBytes, maxRun: lim.MaxTokenBytes}
	x := xml.NewDecoder(src)
	x.Strict = true
	return &decoder{x: x, src: src, lim: lim, bound: map[string]int{}}
}

// document reads the prolog, dispatches on the root's namespace URI (never
// on its prefix) and checks that nothing but comments follow the root.
func (d *decoder) document() (*Metalink, error) {
	root, err := d.rootElement()
	if err != nil {
		return nil, err
	}
	var m *Metalink
	switch {
	case root.Name.Local == "metalink" && root.Name.Space == Namespace:
		m, err = d.metalink4(root)
	case root.Name.Local == "metalink" && root.Name.Space == NamespaceV3:
		d.warn(CodeMetalink3, elemRef{name: "metalink"},
			"Metalink 3 document ("+NamespaceV3+"), read as Metalink 4")
		m, err = d.metalink3(root)
	default:
		return nil, d.notMetalink(root.Name)
	}
	if err != nil {
		return nil, err
	}
	if m.Dynamic != nil && m.Origin == "" {
		// MirrorManager and curl write Metalink 3 type="dynamic" with no
		// origin: there is nothing to refresh from, so the flag means nothing.
		d.warn(CodeOriginDynamic, elemRef{name: "origin", attr: "dynamic"}, "dynamic without an origin IRI ignored")
		m.Dynamic = nil
	}
	return m, d.epilogue()
}

func (d *decoder) notMetalink(n xml.Name) error {
	ns := "no namespace"
	if n.Space != "" {
		ns = "namespace " + n.Space
	}
	return &finding.Finding{Severity: finding.Error, Code: CodeNotMetalink, Line: d.line(), Err: ErrNotMetalink,
		Msg: fmt.Sprintf("root element <%s> in %s; want <metalink> in %s or %s", n.Local, ns, Namespace, NamespaceV3)}
}

func (d *decoder) rootElement() (xml.StartElement, error) {
	for {
		tok, err := d.next()
		if err != nil {
			return xml.StartElement{}, err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			return t, nil
		case xml.CharData:
			if !isBlank(t) {
				return xml.StartElement{}, d.syntax("text before the root element")
			}
		}
	}
}

func (d *decoder) epilogue() error {
	for {
		tok, err := d.x.Token()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return d.fatal(err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			return d.syntax("a second root element <" + t.Name.Local + ">")
		case xml.CharData:
			if !isBlank(t) {
				return d.syntax("text after the root element")
			}
		}
	}
}

// next returns the next token and keeps the namespace and depth
// bookkeeping. Every read goes through it.
func (d *decoder) next() (xml.Token, error) {
	tok, err := d.x.Token()
	if err != nil {
		return nil, d.fatal(err)
	}
	switch t := tok.(type) {
	case xml.StartElement:
		if err := d.enter(t); err != nil {
			return nil, err
		}
	case xml.EndElement:
		d.leave()
	}
	return tok, nil
}

func (d *decoder) enter(t xml.StartElement) error {
	d.depth++
	if d.depth > d.lim.MaxDepth {
		return d.limit(CodeLimitDepth, fmt.Sprintf("elements nested deeper than %d", d.lim.MaxDepth))
	}
	n := 0
	for _, a := range t.Attr {
		if isNSDecl(a.Name) {
			d.bound[a.Value]++
			d.declURIs = append(d.declURIs, a.Value)
			n++
		}
	}
	d.declCount = append(d.declCount, n)
	if dup, ok := duplicateAttr(t.Attr); ok {
		return d.syntax(fmt.Sprintf("attribute %q repeated on <%s>", dup, t.Name.Local))
	}
	return nil
}

func (d *decoder) leave() {
	last := len(d.declCount) - 1
	n := d.declCount[last]
	d.declCount = d.declCount[:last]
	for _, uri := range d.declURIs[len(d.declURIs)-n:] {
		d.bound[uri]--
	}
	d.declURIs = d.declURIs[:len(d.declURIs)-n]
	d.depth--
}

func isNSDecl(n xml.Name) bool {
	return n.Space == "xmlns" || n.Space == "" && n.Local == "xmlns"
}

// duplicateAttr finds a repeated attribute, which encoding/xml accepts
// although it makes the document ill-formed. A map is used only for long
// lists so the common case does not allocate and the worst is not quadratic.
func duplicateAttr(attrs []xml.Attr) (string, bool) {
	if len(attrs) <= 8 {
		for i := range attrs {
			for j := i + 1; j < len(attrs); j++ {
				if attrs[i].Name == attrs[j].Name {
					return attrs[i].Name.Local, true
				}
			}
		}
		return "", false
	}
	seen := make(map[xml.Name]bool, len(attrs))
	for _, a := range attrs {
		if seen[a.Name] {
			return a.Name.Local, true
		}
		seen[a.Name] = true
	}
	return "", false
}

// isBound reports whether a translated name's Space is a namespace URI in
// scope; an unbound prefix is left in Space by encoding/xml.
func (d *decoder) isBound(space string) bool {
	return space == "" || space == xmlNamespace || d.bound[space] > 0
}

const xmlNamespace = "http://www.w3.org/XML/1998/namespace"

// skip consumes the rest of the element just started.
func (d *decoder) skip() error {
	for target := d.depth - 1; d.depth > target; {
		if _, err := d.next(); err != nil {
			return err
		}
	}
	return nil
}

// readText returns the character data of a text-only element. Child
// elements are not allowed in text constructs (§3.1); they are skipped.
func (d *decoder) readText(ref elemRef) (string, error) {
	var s string
	var b *strings.Builder // only when the text comes in several pieces
	for {
		tok, err := d.next()
		if err != nil {
			return "", err
		}
		switch t := tok.(type) {
		case xml.CharData:
			switch {
			case b != nil:
				b.Write(t)
			case s == "":
				s = string(t)
			default:
				b = &strings.Builder{}
				b.WriteString(s)
				b.Write(t)
			}
		case xml.StartElement:
			d.warn(CodeTextChildren, ref, "child element <"+t.Name.Local+"> ignored: this element holds text only")
			if err := d.skip(); err != nil {
				return "", err
			}
		case xml.EndElement:
			if b != nil {
				return b.String(), nil
			}
			return s, nil
		}
	}
}

// trimmed removes surrounding whitespace from a value whose type does not
// allow it (§2: integers, dates, IRIs) and warns when there was any.
func (d *decoder) trimmed(s string, ref elemRef) string {
	t := strings.TrimSpace(s)
	if t != s {
		d.warn(CodeWhitespace, ref, "leading or trailing whitespace removed (§2 forbids it here)")
	}
	return t
}

func isBlank(b []byte) bool {
	return len(bytes.TrimLeft(b, " \t\r\n")) == 0
}

func (d *decoder) line() int {
	l, _ := d.x.InputPos()
	return l
}

func (d *decoder) report(sev finding.Severity, code string, ref elemRef, msg string) {
	p := finding.Finding{Severity: sev, Code: code, Line: d.line(), Msg: msg}
	locate(&p, d.fileIdx, d.fileName, ref)
	d.sink.add(p)
}

func (d *decoder) warn(code string, ref elemRef, msg string) {
	d.report(finding.Warning, code, ref, msg)
}
func (d *decoder) fail(code string, ref elemRef, msg string) { d.report(finding.Error, code, ref, msg) }

func (d *decoder) syntax(msg string) error {
	return &finding.Finding{Severity: finding.Error, Code: CodeSyntax, Line: d.line(), Msg: msg}
}

func (d *decoder) limit(code, msg string) error {
	return &finding.Finding{Severity: finding.Error, Code: code, Line: d.line(), Msg: msg, Err: ErrLimit}
}

// fatal turns an error from encoding/xml or the reader into a fatal
// *finding.Finding.
func (d *decoder) fatal(err error) error {
	var p *finding.Finding
	if errors.As(err, &p) {
		q := *p // the reader's problem has no position yet
		q.Line = d.line()
		return &q
	}
	if d.src.err != nil {
		return &finding.Finding{Severity: finding.Error, Code: CodeRead, Msg: "reading: " + err.Error(), Err: err}
	}
	if err == io.EOF {
		return d.syntax("no root element")
	}
	var se *xml.SyntaxError
	if errors.As(err, &se) {
		return &finding.Finding{Severity: finding.Error, Code: CodeSyntax, Line: se.Line, Msg: se.Msg, Err: err}
	}
	return &finding.Finding{Severity: finding.Error, Code: CodeSyntax, Line: d.line(), Msg: err.Error(), Err: err}
}

// limitReader caps the bytes read and the longest run of bytes without a
// '<'. encoding/xml buffers a whole text node, tag or comment before
// returning it, so the run cap bounds that buffer before it is filled.
type limitReader struct {
	r           io.Reader
	n, max      int64
	run, maxRun int
	err         error // a read error from r, other than io.EOF
	fail        error // the limit error, returned again on later calls
}

func (l *limitReader) Read(p []byte) (int, error) {
	if l.fail != nil {
		return 0, l.fail
	}
	if int64(len(p)) > l.max-l.n+1 {
		p = p[:l.max-l.n+1]
	}
	k, err := l.r.Read(p)
	if err != nil && err != io.EOF {
		l.err = err
	}
	l.n += int64(k)
	if l.n > l.max {
		l.fail = &finding.Finding{Severity: finding.Error, Code: CodeLimitBytes, Err: ErrLimit,
			Msg: fmt.Sprintf("document larger than %d bytes", l.max)}
		return 0, l.fail
	}
	if l.fail = l.scan(p[:k]); l.fail != nil {
		return 0, l.fail
	}
	return k, err
}

func (l *limitReader) scan(b []byte) error {
	for {
		i := bytes.IndexByte(b, '<')
		if i < 0 {
			l.run += len(b)
			break
		}
		if l.run+i > l.maxRun {
			l.run += i
			break
		}
		l.run = 0
		b = b[i+1:]
	}
	if l.run > l.maxRun {
		return &finding.Finding{Severity: finding.Error, Code: CodeLimitToken, Err: ErrLimit,
			Msg: fmt.Sprintf("a text, tag or comment longer than %d bytes", l.maxRun)}
	}
	return nil
}
