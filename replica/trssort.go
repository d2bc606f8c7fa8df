package replica

import (
	"bufio"
	"cmp"
	"context"
	"encoding/binary"
	"strings"

	"github.com/rsdump/rsdump/internal/extsort"
	"github.com/rsdump/rsdump/trs"
)

// The TRS consumer's sorts hold these many records in memory at once,
// each a few MB: a <loc> or an event takes about a hundred bytes, an
// entry of the Source's Resource Lists about five hundred. Variables for
// tests.
var (
	trsSortRun  = 1 << 16
	trsEntryRun = 1 << 13
)

// newLocSorter sorts <loc>s, its run files in dir named by pattern.
func newLocSorter(dir, pattern string) *extsort.Sorter[string] {
	return extsort.New(dir, pattern, trsSortRun, func(a, b *string) int { return strings.Compare(*a, *b) }, extsort.Strings)
}

// eventLog is the events of a Change Log after a sync point, sorted by
// order on disk: memory holds a run of them, not the log.
type eventLog struct {
	sorted *extsort.Sorter[trs.Event]
	at     int64 // the sync point's order: the events are those after it
	n      int   // how many
}

// readEvents walks the Change Log of set back to point (trs.Client.Walk)
// and sorts the events after it. An event of the same order as another
// keeps its place in the walk.
func readEvents(ctx context.Context, c *trs.Client, set *trs.Set, point, dir string) (*eventLog, error) {
	l := &eventLog{sorted: extsort.New(dir, ".rsdump-trs-events-*.tmp", trsSortRun, func(a, b *trs.Event) int { return cmp.Compare(a.Order, b.Order) }, eventCodec)}
	at, err := c.Walk(ctx, set, point, l.sorted.Add)
	if err == nil {
		l.at = at
		err = l.each(func(trs.Event) error { l.n++; return nil })
	}
	if err != nil {
		l.close()
		return nil, err
	}
	return l, nil
}

// stream returns the events after the sync point, oldest first; it may
// be called again once a stream was read to its end.
func (l *eventLog) stream() (extsort.Source[trs.Event], error) {
	src, err := l.sorted.Sorted()
	if err != nil {
		return nil, err
	}
	return afterSource{src, l.at}, nil
}

// each hands fn the events after the sync point, oldest first.
func (l *eventLog) each(fn func(trs.Event) error) error {
	src, err := l.stream()
	if err != nil {
		return err
	}
	for {
		e, ok, err := src.Next()
		if err != nil || !ok {
			return err
		}
		if err := fn(e); err != nil {
			return err
		}
	}
}

func (l *eventLog) close() { l.sorted.Close() }

// afterSource is a stream of events by order without those up to at.
type afterSource struct {
	extsort.Source[trs.Event]
	at int64
}

func (a afterSource) Next() (trs.Event, bool, error) {
	for {
		e, ok, err := a.Source.Next()
		if err != nil || !ok || e.Order > a.at {
			return e, ok, err
		}
	}
}

var eventCodec = extsort.Codec[trs.Event]{
	Append: func(b []byte, e *trs.Event) []byte {
		b = extsort.AppendString(b, e.URI)
		b = extsort.AppendString(b, e.Type)
		b = extsort.AppendString(b, e.Changed)
		return binary.AppendVarint(b, e.Order)
	},
	Read: func(r *bufio.Reader) (trs.Event, error) {
		var e trs.Event
		var err error
		if e.URI, err = extsort.ReadString(r); err != nil {
			return e, err // io.EOF at a clean end
		}
		if e.Type, err = extsort.ReadString(r); err == nil {
			if e.Changed, err = extsort.ReadString(r); err == nil {
				e.Order, err = binary.ReadVarint(r)
			}
		}
		return e, extsort.NoEOF(err)
	},
}

// ownedFile is a file rsdump owns in the tree: its <loc> and the version
// it wrote.
type ownedFile struct {
	loc, hash string
	length    int64
}

var ownedCodec = extsort.Codec[ownedFile]{
	Append: func(b []byte, o *ownedFile) []byte {
		b = extsort.AppendString(b, o.loc)
		b = extsort.AppendString(b, o.hash)
		return binary.AppendVarint(b, o.length)
	},
	Read: func(r *bufio.Reader) (ownedFile, error) {
		var o ownedFile
		var err error
		if o.loc, err = extsort.ReadString(r); err != nil {
			return o, err // io.EOF at a clean end
		}
		if o.hash, err = extsort.ReadString(r); err == nil {
			o.length, err = binary.ReadVarint(r)
		}
		return o, extsort.NoEOF(err)
	},
}

// ahead reads a sorted stream one record ahead, for a merge join: head
// is the next record while ok; a read error stops it, in err.
type ahead[T any] struct {
	src  extsort.Source[T]
	head T
	ok   bool
	err  error
}

func newAhead[T any](src extsort.Source[T]) *ahead[T] {
	a := &ahead[T]{src: src}
	a.next()
	return a
}

func (a *ahead[T]) next() {
	if a.err == nil {
		a.head, a.ok, a.err = a.src.Next()
	}
	if a.err != nil {
		a.ok = false
	}
}

// sortedAhead is the sorted records of s, read ahead.
func sortedAhead[T any](s *extsort.Sorter[T]) (*ahead[T], error) {
	src, err := s.Sorted()
	if err != nil {
		return nil, err
	}
	return newAhead(src), nil
}
