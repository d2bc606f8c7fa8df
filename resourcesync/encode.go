package resourcesync

import (
	"bufio"
	"errors"
	"fmt"
	"io"
)

// ErrLimit is returned by Encoder.Encode when the entry would take the
// document past MaxEntries entries or MaxBytes bytes. Nothing is written in
// that case, so a caller can Close the document, start the next one and
// encode the same entry there.
var ErrLimit = errors.New("sitemap document limit reached")

const prolog = `<?xml version="1.0" encoding="UTF-8"?>` + "\n"

// Encoder writes one <urlset> or <sitemapindex> document, one entry at a
// time. The output is deterministic: the same header and entries give the
// same bytes. Each entry takes one line.
type Encoder struct {
	w      *bufio.Writer
	kind   Kind
	x      xmlBuf // reused for every entry
	count  int
	size   int64
	closed bool
	body   bool // entries only: see NewBodyEncoder
}

// NewEncoder writes the XML declaration, the root element, which declares
// both namespaces once, and the header: a line per <rs:ln>, then the
// <rs:md> line (left out when h.MD has no attribute set). Write errors may
// surface only from Encode or Close, since output is buffered.
func NewEncoder(w io.Writer, h Header) (*Encoder, error) {
	if h.Kind != URLSet && h.Kind != SitemapIndex {
		return nil, fmt.Errorf("unknown document kind %d", int(h.Kind))
	}
	e := &Encoder{w: bufio.NewWriterSize(w, 64<<10), kind: h.Kind}
	writeHeader(&e.x, h)
	if e.x.err != nil {
		return nil, fmt.Errorf("document header: %w", e.x.err)
	}
	if err := e.write(); err != nil {
		return nil, err
	}
	return e, nil
}

func writeHeader(x *xmlBuf, h Header) {
	x.raw(prolog)
	x.raw("<" + h.Kind.String() + ` xmlns="` + NSSitemap + `" xmlns:rs="` + NSRS + `">` + "\n")
	for i := range h.Links {
		writeLink(x, &h.Links[i])
		x.raw("\n")
	}
	if !h.MD.IsZero() {
		writeMD(x, &h.MD)
		x.raw("\n")
	}
}

// EncodeAll writes a whole document: header h and the entries urls. An
// entry that cannot be written fails it, naming the entry's <loc>; output
// is buffered, so w may hold a part of the document then.
func EncodeAll(w io.Writer, h Header, urls []URL) error {
	enc, err := NewEncoder(w, h)
	if err != nil {
		return err
	}
	for _, u := range urls {
		if err := enc.Encode(u); err != nil {
			return fmt.Errorf("%s: %w", u.Loc, err)
		}
	}
	return enc.Close()
}

// Encode writes u as one entry line. It fails without writing anything when
// u has no Loc, when a string holds a character XML cannot carry, and with
// ErrLimit when the document is full.
func (e *Encoder) Encode(u URL) error {
	if e.closed {
		return errors.New("encode after close")
	}
	if u.Loc == "" {
		return fmt.Errorf("entry %d: no loc", e.count+1)
	}
	if e.count >= MaxEntries {
		return fmt.Errorf("%w: %d entries", ErrLimit, MaxEntries)
	}
	e.x.reset()
	writeEntry(&e.x, e.kind, &u)
	if e.x.err != nil {
		return fmt.Errorf("entry %s: %w", u.Loc, e.x.err)
	}
	return e.put(e.x.b)
}

// EncodeLine writes line, an entry as Encode wrote it into an earlier
// document of the same kind (one line, its end included), under the same
// limits: a document can take the entries it shares with an earlier one
// without their being decoded and encoded again. The caller vouches for
// the line.
func (e *Encoder) EncodeLine(line []byte) error {
	if e.closed {
		return errors.New("encode after close")
	}
	if e.count >= MaxEntries {
		return fmt.Errorf("%w: %d entries", ErrLimit, MaxEntries)
	}
	return e.put(line)
}

// put writes an encoded entry if the document has room for it.
func (e *Encoder) put(entry []byte) error {
	if e.size+int64(len(entry))+int64(len(e.closing())) > MaxBytes {
		return fmt.Errorf("%w: %d bytes", ErrLimit, MaxBytes)
	}
	if _, err := e.w.Write(entry); err != nil {
		return fmt.Errorf("write sitemap: %w", err)
	}
	e.size += int64(len(entry))
	e.count++
	return nil
}

// Close writes the closing root tag and flushes the output. It does not
// close the underlying writer. Closing twice is a no-op.
func (e *Encoder) Close() error {
	if e.closed {
		return nil
	}
	e.closed = true
	e.x.reset()
	if !e.body {
		e.x.raw(e.closing())
	}
	if err := e.write(); err != nil {
		return err
	}
	if err := e.w.Flush(); err != nil {
		return fmt.Errorf("write sitemap: %w", err)
	}
	return nil
}

// Count returns the number of entries written.
func (e *Encoder) Count() int { return e.count }

// Size returns the number of bytes written so far, buffered or not,
// without the closing root tag.
func (e *Encoder) Size() int64 { return e.size }

// EntrySize returns the number of bytes Encode writes for u in a <urlset>,
// including the line end. In a <sitemapindex>, where the entry element is
// <sitemap> rather than <url>, an entry is 8 bytes longer; use
// Encoder.EntrySize there.
func EntrySize(u URL) int { return entrySize(URLSet, &u) }

// EntrySize returns the number of bytes Encode would write for u in this
// encoder's document.
func (e *Encoder) EntrySize(u URL) int { return entrySize(e.kind, &u) }

func entrySize(k Kind, u *URL) int {
	var x xmlBuf
	writeEntry(&x, k, u)
	return len(x.b)
}

func (e *Encoder) closing() string { return "</" + e.kind.String() + ">\n" }

func (e *Encoder) write() error {
	if _, err := e.w.Write(e.x.b); err != nil {
		return fmt.Errorf("write sitemap: %w", err)
	}
	e.size += int64(len(e.x.b))
	return nil
}

// entryName is the element of one entry under the root of kind k.
func entryName(k Kind) string {
	if k == SitemapIndex {
		return "sitemap"
	}
	return "url"
}

// writeEntry writes the children in the order sitemap.xsd requires: loc,
// lastmod, changefreq, then the extension elements.
func writeEntry(x *xmlBuf, k Kind, u *URL) {
	name := entryName(k)
	x.raw("<" + name + ">")
	x.element("loc", u.Loc)
	x.timeElement("lastmod", u.Lastmod)
	x.element("changefreq", u.ChangeFreq)
	if u.MD != nil {
		writeMD(x, u.MD)
	}
	for i := range u.Links {
		writeLink(x, &u.Links[i])
	}
	x.raw("</" + name + ">\n")
}

// writeMD writes <rs:md .../> with the attributes in a fixed order: the
// document-level ones first, then those describing a representation.
func writeMD(x *xmlBuf, m *MD) {
	const el = "rs:md"
	x.raw("<rs:md")
	x.attr(el, "capability", m.Capability)
	x.timeAttr("at", m.At)
	x.timeAttr("completed", m.Completed)
	x.timeAttr("from", m.From)
	x.timeAttr("until", m.Until)
	x.timeAttr("datetime", m.Datetime)
	x.attr(el, "change", m.Change)
	x.attr(el, "hash", m.Hash)
	if m.Length != nil {
		x.intAttr("length", *m.Length)
	}
	x.attr(el, "type", m.Type)
	x.attr(el, "encoding", m.Encoding)
	x.attr(el, "path", m.Path)
	if m.Pieces != nil {
		writePieces(x, m.Pieces)
	}
	x.raw("/>")
}

// writeLink writes <rs:ln .../>, rel and href first.
func writeLink(x *xmlBuf, l *Link) {
	const el = "rs:ln"
	x.raw("<rs:ln")
	x.attr(el, "rel", l.Rel)
	x.attr(el, "href", l.Href)
	if l.Pri != 0 {
		x.intAttr("pri", int64(l.Pri))
	}
	x.attr(el, "hash", l.Hash)
	if l.Length != nil {
		x.intAttr("length", *l.Length)
	}
	x.timeAttr("modified", l.Modified)
	x.attr(el, "type", l.Type)
	x.attr(el, "encoding", l.Encoding)
	x.attr(el, "path", l.Path)
	x.raw("/>")
}

// NewBodyEncoder writes the entries of a document of kind k and nothing
// else: no declaration, no root element, no header, and Close writes no
// closing tag. It is for documents whose header is known only once the
// entries are written (a completed or until time): the body goes to a
// scratch file and WriteDocument puts header and body together. headerSize
// is reserved against MaxBytes for the header the body will be given.
func NewBodyEncoder(w io.Writer, k Kind, headerSize int) *Encoder {
	e := &Encoder{w: bufio.NewWriterSize(w, 64<<10), kind: k, body: true}
	e.size = int64(headerSize)
	return e
}

// HeaderSize returns the bytes NewEncoder writes for h before the first
// entry, for NewBodyEncoder's reservation.
func HeaderSize(h Header) int {
	var x xmlBuf
	writeHeader(&x, h)
	return len(x.b)
}

// WriteDocument writes a whole document: the declaration, root element
// and header h, then body, the entries as a body encoder wrote them, and
// the closing tag.
func WriteDocument(w io.Writer, h Header, body io.Reader) error {
	var x xmlBuf
	writeHeader(&x, h)
	if x.err != nil {
		return fmt.Errorf("document header: %w", x.err)
	}
	if _, err := w.Write(x.b); err != nil {
		return err
	}
	if _, err := io.Copy(w, body); err != nil {
		return err
	}
	_, err := io.WriteString(w, "</"+h.Kind.String()+">\n")
	return err
}
