package metalink

import (
	"bufio"
	"errors"
	"fmt"
	"io"

	"github.com/rsdump/rsdump/finding"
)

// Encoder writes a Metalink 4 document one file at a time, so that a
// document listing many large files, each with thousands of piece hashes,
// never has to be held in memory. For the same model it writes the same
// bytes as Encode, and it refuses what Encode refuses: a file that
// Validate reports errors for is not written, and neither is a second file
// with the same name.
type Encoder struct {
	x      *xmlWriter
	exts   []Extension
	names  map[string]int
	n      int
	closed bool
}

// NewEncoder writes the XML declaration, the root element and the
// document-level elements of head (generator, origin, published, updated);
// head's extensions are written by Close, after the files. head must have
// no files: pass them to Encode. Output is buffered until Close.
func NewEncoder(w io.Writer, head *Metalink) (*Encoder, error) {
	if head == nil {
		return nil, errors.New("metalink: nil document")
	}
	if len(head.Files) > 0 {
		return nil, errors.New("metalink: NewEncoder takes a head without files; pass each file to Encode")
	}
	v := &validator{}
	v.root(head)
	var ps []finding.Finding
	for _, p := range v.sink.done() {
		if p.Code != CodeNoFiles {
			ps = append(ps, p)
		}
	}
	if err := finding.Err("metalink: ", ps); err != nil {
		return nil, fmt.Errorf("metalink: refusing to encode: %w", err)
	}
	e := &Encoder{x: &xmlWriter{w: bufio.NewWriter(w)}, exts: head.Extensions, names: map[string]int{}}
	e.x.raw(`<?xml version="1.0" encoding="UTF-8"?>` + "\n")
	e.x.open(0, "metalink", attr{"xmlns", Namespace})
	e.x.leaf(1, "generator", head.Generator)
	if head.Origin != "" {
		e.x.leaf(1, "origin", head.Origin, attr{"dynamic", formatBool(head.Dynamic)})
	}
	e.x.leaf(1, "published", formatDate(head.Published))
	e.x.leaf(1, "updated", formatDate(head.Updated))
	return e, e.x.err
}

// Encode validates f and writes it as the next <file>. On a validation
// error nothing is written and the Encoder stays usable; on a write error
// every later call fails.
func (e *Encoder) Encode(f *File) error {
	if e.closed {
		return errors.New("metalink: Encode after Close")
	}
	if err := e.check(f); err != nil {
		return fmt.Errorf("metalink: refusing to encode: %w", err)
	}
	e.n++
	if f.Name != "" {
		e.names[f.Name] = e.n
	}
	e.x.file(f)
	return e.x.err
}

// check applies Validate's rules to f as file number e.n+1 of the
// document, including the uniqueness of its name among those written.
func (e *Encoder) check(f *File) error {
	v := &validator{fileIdx: e.n + 1, name: f.Name}
	v.file(f)
	if j, dup := e.names[f.Name]; dup {
		v.add(finding.Error, CodeNameDuplicate, elemRef{name: "file", attr: "name"}, "file[%d] has the same name (§4.1.2.1 MUST be unique)", j)
	}
	return finding.Err("metalink: ", v.sink.done())
}

// Count returns the number of files written.
func (e *Encoder) Count() int { return e.n }

// Close writes the document's extensions and closing tag and flushes the
// output; it does not close the underlying writer. A document needs at
// least one file (§4.1.1): Close fails if none was written.
func (e *Encoder) Close() error {
	if e.closed {
		return e.x.err
	}
	e.closed = true
	if e.n == 0 {
		e.x.fail(errors.New("metalink: refusing to encode: a metalink needs at least one <file> (§4.1.1)"))
		return e.x.err
	}
	e.x.extensions(1, e.exts)
	e.x.close(0, "metalink")
	if e.x.err != nil {
		return e.x.err
	}
	return e.x.w.Flush()
}
