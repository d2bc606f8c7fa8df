package resourcesync

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/rsdump/rsdump/internal/iocount"
)

// OpenFunc opens the document at loc, a file path or a URL (http, https,
// s3).
type OpenFunc func(ctx context.Context, loc string) (io.ReadCloser, error)

// Document is one document a Loader read: the one it was given, or a part
// an index lists.
type Document struct {
	Loc    string // where it was read from
	Header Header
	Index  *Document // the index that lists it; nil for the top document
}

// A Loader reads a document and, when it is a <sitemapindex>, every
// document the index lists, the same way for files and URLs: a part's
// <loc> is resolved by Resolve, and an index naming one it may not is an
// error. Only one level of index
// is followed (sitemaps and §5.2 allow no more); a part must have the
// index's capability. Entries are handed over as they are decoded, so
// memory does not grow with the document.
type Loader struct {
	// Open opens a document. Nil is Open, the one opener with its
	// defaults.
	Open OpenFunc
	// Document is called with each document's header before its entries:
	// the top document first, then each part of an index.
	Document func(d *Document) error
	// Entry is called for every entry, n counting from 1 in each
	// document. For an index (d.Header.Kind == SitemapIndex) the part is
	// loaded after Entry returns nil.
	Entry func(d *Document, n int, u URL) error
	// PartFailed is called when a part cannot be opened, decoded or
	// used; returning nil goes on with the next part. Nil stops the load
	// with the error.
	PartFailed func(index *Document, n int, u URL, err error) error
	// NoParts hands an index's entries to Entry without loading the
	// parts.
	NoParts bool
	// SkipPart, when set, is asked of each entry of an index, after
	// Entry: true leaves that part unread (a Destination that has applied
	// it already need not fetch it again).
	SkipPart func(index *Document, n int, u URL) bool
	// NotAfter, when set, refuses a document whose own times or whose
	// entries' times of change are later than it (FutureHeader,
	// FutureEntry): a Destination sets Horizon(), so that no time from a
	// Source's future reaches its state.
	NotAfter time.Time
	// MaxParts bounds the parts of an index a load reads: past it, the
	// load stops with an error wrapping ErrTooManyParts, so that an index
	// a server makes endless (it is one document, but of up to MaxBytes)
	// is not walked for ever. Default MaxEntries, the sitemap protocol's
	// limit on an index's entries.
	MaxParts int
}

// ErrTooManyParts is an index listing more parts than Loader.MaxParts.
var ErrTooManyParts = errors.New("an index listing more parts than the walk's bound")

// OpenError is a document that could not be opened or read, as opposed to
// one that was read and is not valid.
type OpenError struct {
	Loc string
	Err error
}

func (e *OpenError) Error() string {
	if msg := e.Err.Error(); strings.Contains(msg, e.Loc) {
		return msg // *url.Error and httpc's errors name the URL already
	}
	return e.Loc + ": " + e.Err.Error()
}
func (e *OpenError) Unwrap() error { return e.Err }

// Load reads the document at loc and the parts of an index. Errors name
// the document they come from.
func (l *Loader) Load(ctx context.Context, loc string) error {
	return l.load(ctx, loc, nil)
}

func (l *Loader) load(ctx context.Context, loc string, index *Document) error {
	rc, err := l.open(ctx, loc)
	if err != nil {
		return err
	}
	defer rc.Close()
	return l.Read(ctx, loc, rc, index)
}

// Read is Load of a document already open as r; index is the document
// that lists it, or nil.
func (l *Loader) Read(ctx context.Context, loc string, r io.Reader, index *Document) error {
	dec, err := NewDecoder(capReader(r))
	if err != nil {
		return fmt.Errorf("%s: %w", loc, err)
	}
	d := &Document{Loc: loc, Header: dec.Header(), Index: index}
	if err := checkPart(d); err != nil {
		return err
	}
	if err := l.future(loc, 0, d.Header, URL{}); err != nil {
		return err
	}
	if l.Document != nil {
		if err := l.Document(d); err != nil {
			return err
		}
	}
	for n := 1; ; n++ {
		u, err := dec.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: %w", loc, err)
		}
		if err := l.future(loc, n, d.Header, u); err != nil {
			return err
		}
		if err := l.entry(ctx, d, n, u); err != nil {
			return err
		}
	}
}

// future is the FutureError of the header (n 0) or entry n, when the
// Loader has a NotAfter.
func (l *Loader) future(loc string, n int, h Header, u URL) error {
	switch {
	case l.NotAfter.IsZero():
		return nil
	case n == 0:
		return FutureHeader(loc, h, l.NotAfter)
	}
	return FutureEntry(loc, n, u, l.NotAfter)
}

func (l *Loader) entry(ctx context.Context, d *Document, n int, u URL) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if l.Entry != nil {
		if err := l.Entry(d, n, u); err != nil {
			return err
		}
	}
	if d.Header.Kind != SitemapIndex || l.NoParts || l.SkipPart != nil && l.SkipPart(d, n, u) {
		return nil
	}
	if max := cmp.Or(l.MaxParts, MaxEntries); n > max {
		return fmt.Errorf("%s: part %d: %w (Loader.MaxParts, %d)", d.Loc, n, ErrTooManyParts, max)
	}
	part, err := Resolve(ctx, d.Loc, u.Loc)
	if err != nil {
		return err // the index is at fault, not the part
	}
	err = l.load(ctx, part, d)
	switch {
	case err == nil || ctx.Err() != nil:
		return err
	case l.PartFailed == nil:
		return fmt.Errorf("%s: part %d: %w", d.Loc, n, err)
	}
	return l.PartFailed(d, n, u, err)
}

// checkPart applies the rules for a part of an index.
func checkPart(d *Document) error {
	if d.Index == nil {
		return nil
	}
	switch c, ic := d.Header.MD.Capability, d.Index.Header.MD.Capability; {
	case d.Header.Kind == SitemapIndex:
		return fmt.Errorf("%s: an index listed by the index %s (only one level is allowed)", d.Loc, d.Index.Loc)
	case ic != "" && c != ic:
		return fmt.Errorf("%s: capability %q differs from its index's %q (%s)", d.Loc, c, ic, d.Index.Loc)
	}
	return nil
}

func (l *Loader) open(ctx context.Context, loc string) (io.ReadCloser, error) {
	open := l.Open
	if open == nil {
		open = Open
	}
	rc, err := open(ctx, loc)
	if err != nil {
		var oe *OpenError
		if errors.As(err, &oe) {
			return nil, err
		}
		return nil, &OpenError{Loc: loc, Err: stripLoc(err, loc)}
	}
	return rc, nil
}

// stripLoc removes a leading "loc: " or the *os.PathError wrapping, so that
// an OpenError names the document once.
func stripLoc(err error, loc string) error {
	var pe *os.PathError
	if errors.As(err, &pe) && pe.Path == loc {
		return pe.Err
	}
	if s, ok := strings.CutPrefix(err.Error(), loc+": "); ok {
		return &stripped{msg: s, err: err} // errors.Is still sees the cause
	}
	return err
}

// stripped is an error whose message no longer starts with the location
// the OpenError around it names.
type stripped struct {
	msg string
	err error
}

func (e *stripped) Error() string { return e.msg }
func (e *stripped) Unwrap() error { return e.err }

// ErrTooLarge is a document over the sitemap limit of MaxBytes.
var ErrTooLarge = fmt.Errorf("document larger than the sitemap limit of %d bytes", MaxBytes)

// capReader fails a document past MaxBytes rather than reading on: a
// package given by mistake, or a server that never stops.
func capReader(r io.Reader) io.Reader {
	return &capped{iocount.Reader{R: io.LimitReader(r, MaxBytes+1)}}
}

type capped struct{ iocount.Reader }

func (c *capped) Read(p []byte) (int, error) {
	n, err := c.Reader.Read(p)
	if c.N > MaxBytes {
		return 0, ErrTooLarge
	}
	return n, err
}

// Peek reads only the header of the document at loc (Open).
func Peek(ctx context.Context, loc string) (Header, error) {
	rc, err := Open(ctx, loc)
	if err != nil {
		return Header{}, err
	}
	defer rc.Close()
	d, err := NewDecoder(capReader(rc))
	if err != nil {
		return Header{}, fmt.Errorf("%s: %w", loc, err)
	}
	return d.Header(), nil
}

// IsDump reports whether h is the header of a Resource Dump or Change
// Dump document or index.
func IsDump(h Header) bool {
	return h.MD.Capability == CapResourceDump || h.MD.Capability == CapChangeDump
}
