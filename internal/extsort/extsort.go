// Package extsort is an external merge sort: records are held in memory up
// to a run's worth, written sorted to temporary files, and merged back in
// order. Sorting millions of records then needs memory for one run and a
// buffer per run file, not for all of them. pack sorts its baseline,
// changes and hashes with it; verify sorts the targets a dump's packages
// claim.
package extsort

import (
	"bufio"
	"container/heap"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
)

// Codec writes records to a run file and reads them back.
type Codec[T any] struct {
	// Append appends the encoding of r to b.
	Append func(b []byte, r *T) []byte
	// Read decodes the next record; it returns io.EOF, and only io.EOF,
	// at a clean end of the run.
	Read func(r *bufio.Reader) (T, error)
}

// Source is a stream of records in order.
type Source[T any] interface {
	// Next returns the next record; ok is false at the end.
	Next() (r T, ok bool, err error)
}

// Sorter sorts records. Records that compare equal come out in the order
// they were added. A Sorter is not safe for concurrent use.
type Sorter[T any] struct {
	dir, pattern string
	run          int
	cmp          func(a, b *T) int
	codec        Codec[T]
	buf          []T
	runs         []string
	open         []*mergeSource[T] // streams Sorted returned, closed by Close
	count        int64
	total        bool
}

// New returns a sorter that holds up to run records in memory and writes
// its run files in dir, named by pattern (as os.CreateTemp takes it), so
// that whoever owns dir can find and remove those a killed process left.
func New[T any](dir, pattern string, run int, cmp func(a, b *T) int, codec Codec[T]) *Sorter[T] {
	return &Sorter[T]{dir: dir, pattern: pattern, run: max(run, 1), cmp: cmp, codec: codec}
}

// Add adds a record, writing a run file when the memory holds a run.
func (s *Sorter[T]) Add(r T) error {
	s.buf = append(s.buf, r)
	s.count++
	if len(s.buf) >= s.run {
		return s.spill()
	}
	return nil
}

// Len is the number of records added.
func (s *Sorter[T]) Len() int64 { return s.count }

// Runs is the number of run files written so far.
func (s *Sorter[T]) Runs() int { return len(s.runs) }

// Total declares the sorter's comparison a total order: no two records
// compare equal, so the runs can be sorted by a faster, unstable sort.
func (s *Sorter[T]) Total() *Sorter[T] {
	s.total = true
	return s
}

// sortBuf sorts the records in memory. It compares them in place, through
// sort.Interface: a comparison of copies (slices.SortFunc with a function
// of pointers) would move both copies to the heap on every call.
func (s *Sorter[T]) sortBuf() {
	b := byCmp[T]{s.buf, s.cmp}
	if s.total {
		sort.Sort(b)
	} else {
		sort.Stable(b)
	}
}

type byCmp[T any] struct {
	recs []T
	cmp  func(a, b *T) int
}

func (b byCmp[T]) Len() int           { return len(b.recs) }
func (b byCmp[T]) Less(i, j int) bool { return b.cmp(&b.recs[i], &b.recs[j]) < 0 }
func (b byCmp[T]) Swap(i, j int)      { b.recs[i], b.recs[j] = b.recs[j], b.recs[i] }

// MaxFanIn is how many run files a merge reads at once. When a sorter
// has written that many, it merges them into one, so that the buffers of
// the final merge do not grow with the number of records either.
const MaxFanIn = 32

func (s *Sorter[T]) spill() error {
	s.sortBuf()
	name, err := s.writeRun(&sliceSource[T]{recs: s.buf})
	if err != nil {
		return err
	}
	s.runs = append(s.runs, name)
	clear(s.buf) // drop what the records point to
	s.buf = s.buf[:0]
	if len(s.runs) >= MaxFanIn {
		return s.mergeRuns()
	}
	return nil
}

// mergeRuns merges the run files into one, which holds the oldest records
// and so comes first.
func (s *Sorter[T]) mergeRuns() error {
	m, err := s.merge()
	if err != nil {
		return err
	}
	name, err := s.writeRun(m)
	m.closeAll()
	if err != nil {
		return err
	}
	for _, r := range s.runs {
		os.Remove(r)
	}
	s.runs = []string{name}
	return nil
}

// writeRun writes a run file of the records src streams.
func (s *Sorter[T]) writeRun(src Source[T]) (string, error) {
	f, err := os.CreateTemp(s.dir, s.pattern)
	if err != nil {
		return "", err
	}
	err = s.write(f, src)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}

func (s *Sorter[T]) write(f *os.File, src Source[T]) error {
	w := bufio.NewWriterSize(f, 256<<10)
	var b []byte
	for {
		r, ok, err := src.Next()
		if err != nil || !ok {
			if err == nil {
				err = w.Flush()
			}
			return err
		}
		b = s.codec.Append(b[:0], &r)
		if _, err := w.Write(b); err != nil {
			return err
		}
	}
}

// Close removes the run files, and closes the files of a stream Sorted
// returned that was not read to its end.
func (s *Sorter[T]) Close() {
	for _, m := range s.open {
		m.closeAll()
	}
	s.open = nil
	for _, r := range s.runs {
		os.Remove(r)
	}
	s.runs, s.buf = nil, nil
}

// Sorted returns the records in order. The sorter must not be added to
// afterwards; Close it when done with the stream. Sorted may be called
// again, once the stream it returned was read to its end, to read the
// records once more: the run files stay until Close.
func (s *Sorter[T]) Sorted() (Source[T], error) {
	if len(s.runs) == 0 {
		s.sortBuf()
		return &sliceSource[T]{recs: s.buf}, nil
	}
	if len(s.buf) > 0 {
		if err := s.spill(); err != nil {
			return nil, err
		}
	}
	m, err := s.merge()
	if err != nil {
		return nil, err
	}
	s.open = append(s.open, m)
	return m, nil
}

// merge opens the run files for a merge.
func (s *Sorter[T]) merge() (*mergeSource[T], error) {
	m := &mergeSource[T]{cmp: s.cmp}
	for _, name := range s.runs {
		f, err := os.Open(name)
		if err != nil {
			m.closeAll()
			return nil, err
		}
		m.files = append(m.files, f)
		src := &runReader[T]{name: name, r: bufio.NewReaderSize(f, 64<<10), read: s.codec.Read}
		if err := m.push(src); err != nil {
			m.closeAll()
			return nil, err
		}
	}
	return m, nil
}

type sliceSource[T any] struct {
	recs []T
	i    int
}

func (s *sliceSource[T]) Next() (T, bool, error) {
	if s.i >= len(s.recs) {
		var zero T
		return zero, false, nil
	}
	s.i++
	return s.recs[s.i-1], true, nil
}

// runReader reads one run file; name is used in errors.
type runReader[T any] struct {
	name string
	r    *bufio.Reader
	read func(*bufio.Reader) (T, error)
}

func (r *runReader[T]) next() (T, bool, error) {
	rec, err := r.read(r.r)
	switch {
	case errors.Is(err, io.EOF):
		return rec, false, nil
	case err != nil:
		return rec, false, fmt.Errorf("%s: %w", r.name, err)
	}
	return rec, true, nil
}

// mergeSource merges sorted runs with a heap of their heads. Equal records
// come out in the order of their runs, so the merge is stable.
type mergeSource[T any] struct {
	cmp   func(a, b *T) int
	heads []mergeHead[T]
	files []*os.File
}

type mergeHead[T any] struct {
	rec T
	src *runReader[T]
	run int
}

func (m *mergeSource[T]) Len() int { return len(m.heads) }
func (m *mergeSource[T]) Less(i, j int) bool {
	if c := m.cmp(&m.heads[i].rec, &m.heads[j].rec); c != 0 {
		return c < 0
	}
	return m.heads[i].run < m.heads[j].run
}
func (m *mergeSource[T]) Swap(i, j int) { m.heads[i], m.heads[j] = m.heads[j], m.heads[i] }
func (m *mergeSource[T]) Push(x any)    { m.heads = append(m.heads, x.(mergeHead[T])) }
func (m *mergeSource[T]) Pop() any {
	h := m.heads[len(m.heads)-1]
	m.heads = m.heads[:len(m.heads)-1]
	return h
}

func (m *mergeSource[T]) push(src *runReader[T]) error {
	r, ok, err := src.next()
	if err != nil || !ok {
		return err
	}
	heap.Push(m, mergeHead[T]{rec: r, src: src, run: len(m.files)})
	return nil
}

func (m *mergeSource[T]) Next() (T, bool, error) {
	var zero T
	if len(m.heads) == 0 {
		m.closeAll()
		return zero, false, nil
	}
	h := &m.heads[0]
	out := h.rec
	r, ok, err := h.src.next()
	switch {
	case err != nil:
		return zero, false, err
	case ok:
		h.rec = r
		heap.Fix(m, 0)
	default:
		heap.Pop(m)
	}
	return out, true, nil
}

func (m *mergeSource[T]) closeAll() {
	for _, f := range m.files {
		f.Close()
	}
	m.files = nil
}
