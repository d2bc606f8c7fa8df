package resourcesync

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strings"
)

// MaxLinks is the most <rs:ln> elements the decoder accepts in one entry,
// or in the document header. With maxEntryBytes and maxDepth it bounds what
// a hostile document can make the decoder hold.
const MaxLinks = 1000

const (
	// maxEntryBytes bounds the input read for one entry or the header, since
	// encoding/xml holds a whole text or start tag in memory before
	// returning it.
	maxEntryBytes = 8 << 20
	// maxDepth bounds the nesting of unknown elements, for which
	// encoding/xml keeps a stack.
	maxDepth = 100
)

// DecodeError is an error in a document, with the line it was found on.
type DecodeError struct {
	Line  int
	Entry int // 1-based entry number; 0 for the prolog and header
	Err   error
}

func (e *DecodeError) Error() string {
	var se *xml.SyntaxError
	if errors.As(e.Err, &se) {
		return fmt.Sprintf("line %d: malformed XML: %s", e.Line, se.Msg)
	}
	return fmt.Sprintf("line %d: %v", e.Line, e.Err)
}

func (e *DecodeError) Unwrap() error { return e.Err }

// Decoder reads a <urlset> or <sitemapindex> document one entry at a time.
// It matches elements by namespace URI, never by prefix. Elements it does
// not know, in any namespace, are skipped with their content.
//
// An <rs:md> or <rs:ln> child of the root that comes after the first entry
// is an error rather than merged into the header: the schema puts them
// before the entries, and a header that changed after entries were handed
// out could not be trusted by a caller that already acted on them.
type Decoder struct {
	x       *xml.Decoder
	in      *budgetReader
	h       Header
	entry   string            // local name of the entry element
	pending *xml.StartElement // first entry, read while reading the header
	n       int               // entries started
	line    int               // where the last token read began
	err     error             // sticky: io.EOF at the end, or the first error
}

// NewDecoder reads the prolog, the root element and the <rs:md> and
// <rs:ln> children of the root that precede the first entry, in any order.
func NewDecoder(r io.Reader) (*Decoder, error) {
	in := &budgetReader{r: r}
	in.extend(maxEntryBytes)
	d := &Decoder{x: xml.NewDecoder(in), in: in}
	d.x.CharsetReader = onlyUTF8
	if err := d.readRoot(); err != nil {
		return nil, err
	}
	if err := d.readHeader(); err != nil {
		return nil, err
	}
	return d, nil
}

// Header returns what the document says about itself.
func (d *Decoder) Header() Header { return d.h }

// Next returns the next entry, or io.EOF after the last one. After an
// error, Next keeps returning that error.
func (d *Decoder) Next() (URL, error) {
	if d.err != nil {
		return URL{}, d.err
	}
	u, err := d.next()
	if err != nil {
		d.err = err
	}
	return u, err
}

func (d *Decoder) next() (URL, error) {
	d.in.extend(maxEntryBytes)
	start, err := d.nextEntry()
	if err != nil {
		return URL{}, err
	}
	d.n++
	return d.readEntry(start)
}

func (d *Decoder) readRoot() error {
	for {
		tok, err := d.token()
		if err == io.EOF {
			return d.errorf("no root element")
		}
		if err != nil {
			return err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			return d.setRoot(t)
		case xml.CharData:
			if !isSpace(t) {
				d.lineOfText(t)
				return d.errorf("text before the root element")
			}
		}
	}
}

func (d *Decoder) setRoot(t xml.StartElement) error {
	var k Kind
	switch t.Name.Local {
	case "urlset":
		k = URLSet
	case "sitemapindex":
		k = SitemapIndex
	default:
		return d.errorf("root element is %s, want <urlset> or <sitemapindex> in namespace %s", showName(t.Name), NSSitemap)
	}
	if t.Name.Space != NSSitemap {
		return d.errorf("root element %s is not in the sitemap namespace %s", showName(t.Name), NSSitemap)
	}
	d.h.Kind, d.entry = k, entryName(k)
	return nil
}

// readHeader reads the children of the root up to the first entry.
func (d *Decoder) readHeader() error {
	sawMD := false
	for {
		tok, err := d.token()
		if err != nil {
			return err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			done, err := d.headerChild(t, &sawMD)
			if done || err != nil {
				return err
			}
		case xml.EndElement: // a document without entries
			if err := d.finish(); err != io.EOF {
				return err
			}
			d.err = io.EOF
			return nil
		}
	}
}

// headerChild handles one child of the root before the first entry and
// reports whether it was that entry.
func (d *Decoder) headerChild(t xml.StartElement, sawMD *bool) (bool, error) {
	switch {
	case t.Name == rsName("md"):
		if *sawMD {
			return false, d.errorf("more than one <rs:md> in the document header")
		}
		*sawMD = true
		return false, d.readMD(&d.h.MD, t)
	case t.Name == rsName("ln"):
		return false, d.addLink(&d.h.Links, t)
	}
	isEntry, err := d.isEntry(t)
	if isEntry {
		d.pending = &t
	}
	return isEntry, err
}

// nextEntry finds the start of the next entry, skipping unknown elements.
func (d *Decoder) nextEntry() (xml.StartElement, error) {
	if d.pending != nil {
		start := *d.pending
		d.pending = nil
		return start, nil
	}
	for {
		tok, err := d.token()
		if err != nil {
			return xml.StartElement{}, err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			if t.Name == rsName("md") || t.Name == rsName("ln") {
				return t, d.errorf("<rs:%s> of the document after its first entry", t.Name.Local)
			}
			if isEntry, err := d.isEntry(t); isEntry || err != nil {
				return t, err
			}
		case xml.EndElement:
			return xml.StartElement{}, d.finish()
		}
	}
}

// isEntry reports whether t starts an entry. Any other element is skipped,
// except the other kind's entry, which means the root is wrong for the
// content and should not pass silently as an empty document.
func (d *Decoder) isEntry(t xml.StartElement) (bool, error) {
	if t.Name.Space == NSSitemap && t.Name.Local == d.entry {
		return true, nil
	}
	if t.Name.Space == NSSitemap && (t.Name.Local == "url" || t.Name.Local == "sitemap") {
		return false, d.errorf("<%s> entry in a <%s>", t.Name.Local, d.h.Kind)
	}
	return false, d.skip()
}

// finish checks that nothing but comments, processing instructions and
// whitespace follows the root element, and returns io.EOF.
func (d *Decoder) finish() error {
	for {
		tok, err := d.token()
		if err != nil {
			return err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			return d.errorf("element %s after the root element", showName(t.Name))
		case xml.CharData:
			if !isSpace(t) {
				d.lineOfText(t)
				return d.errorf("text after the root element")
			}
		}
	}
}

// token returns the next token, with errors other than io.EOF turned into
// a *DecodeError that carries the line. It records the line the token
// starts on, which is where a problem with an element or text is reported:
// InputPos after the token would give the line of its end.
func (d *Decoder) token() (xml.Token, error) {
	d.line, _ = d.x.InputPos()
	tok, err := d.x.Token()
	if err == nil || err == io.EOF {
		return tok, err
	}
	return nil, d.wrap(err)
}

// skip reads up to the end of the element just started, like
// xml.Decoder.Skip but refusing deep nesting.
func (d *Decoder) skip() error {
	for depth := 1; depth > 0; {
		tok, err := d.token()
		if err == io.EOF {
			err = d.wrap(io.ErrUnexpectedEOF) // a guard: encoding/xml reports EOF inside an element as a syntax error
		}
		if err != nil {
			return err
		}
		switch tok.(type) {
		case xml.StartElement:
			depth++
			if depth > maxDepth {
				return d.errorf("elements nested more than %d deep", maxDepth)
			}
		case xml.EndElement:
			depth--
		}
	}
	return nil
}

// attrs adds the line to an attribute error from setAttrs.
func (d *Decoder) attrs(err error) error {
	if err != nil {
		return d.wrap(err)
	}
	return nil
}

func (d *Decoder) wrap(err error) error {
	line := d.line
	var se *xml.SyntaxError
	if errors.As(err, &se) {
		line = se.Line
	}
	return &DecodeError{Line: line, Entry: d.n, Err: err}
}

func (d *Decoder) errorf(format string, args ...any) error {
	return d.wrap(fmt.Errorf(format, args...))
}

// onlyUTF8 refuses the encodings encoding/xml does not decode itself, with
// a message for users rather than the package's own. ASCII is a subset of
// UTF-8 and passes.
func onlyUTF8(label string, r io.Reader) (io.Reader, error) {
	if strings.EqualFold(label, "us-ascii") || strings.EqualFold(label, "ascii") {
		return r, nil
	}
	return nil, errors.New("only UTF-8 documents are supported")
}

func rsName(local string) xml.Name { return xml.Name{Space: NSRS, Local: local} }

// showName writes a name as <local> or <{namespace}local> for messages.
func showName(n xml.Name) string {
	if n.Space == "" {
		return "<" + n.Local + ">"
	}
	return "<{" + n.Space + "}" + n.Local + ">"
}

func isSpace(b []byte) bool {
	return len(bytes.Trim(b, xmlSpace)) == 0
}

const xmlSpace = " \t\r\n"

// lineOfText moves the line to report from the start of t to its first
// character that is not whitespace.
func (d *Decoder) lineOfText(t xml.CharData) {
	lead := t[:len(t)-len(bytes.TrimLeft(t, xmlSpace))]
	d.line += bytes.Count(lead, []byte("\n"))
}

var errTooLarge = fmt.Errorf("entry or header larger than %d bytes", maxEntryBytes)

// budgetReader fails once more than the current budget has been read, so
// that one entry cannot make the xml.Decoder buffer unbounded input. The
// budget is extended at the start of every entry.
type budgetReader struct {
	r        io.Reader
	n, limit int64
}

func (b *budgetReader) extend(n int64) { b.limit = b.n + n }

func (b *budgetReader) Read(p []byte) (int, error) {
	if b.n >= b.limit {
		return 0, errTooLarge
	}
	if rem := b.limit - b.n; int64(len(p)) > rem {
		p = p[:rem]
	}
	n, err := b.r.Read(p)
	b.n += int64(n)
	return n, err
}

// Each calls fn for every remaining entry, stopping at the first error
// from the document or from fn.
func (d *Decoder) Each(fn func(URL) error) error {
	for {
		u, err := d.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if err := fn(u); err != nil {
			return err
		}
	}
}
