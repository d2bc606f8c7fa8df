package pack

import (
	"container/heap"
	"os"
	"slices"
)

// sortRun is how many records a sorter holds in memory before it writes
// them, sorted, to a temporary file: about 15 MB with typical names. A
// merge of the runs then streams them in order, so sorting the changes or
// the baseline of millions of files needs memory for one run, not for
// all of them.
var sortRun = 100_000

// sortTempPattern names the run files in the output directory;
// removeStaleTemps deletes those a killed run left.
const sortTempPattern = ".rsdump-sort-*.tmp"

// sorter is an external merge sort of records.
type sorter struct {
	dir   string
	cmp   func(a, b *record) int
	buf   []record
	runs  []string
	count int64
}

func newSorter(dir string, cmp func(a, b *record) int) *sorter {
	return &sorter{dir: dir, cmp: cmp}
}

func (s *sorter) add(r record) error {
	s.buf = append(s.buf, r)
	s.count++
	if len(s.buf) >= sortRun {
		return s.spill()
	}
	return nil
}

func (s *sorter) sortBuf() {
	slices.SortStableFunc(s.buf, func(a, b record) int { return s.cmp(&a, &b) })
}

func (s *sorter) spill() error {
	s.sortBuf()
	f, err := os.CreateTemp(s.dir, sortTempPattern)
	if err != nil {
		return err
	}
	s.runs = append(s.runs, f.Name())
	w := newRecWriter(f)
	for i := range s.buf {
		if err := w.write(&s.buf[i]); err != nil {
			f.Close()
			return err
		}
	}
	if err := w.flush(); err != nil {
		f.Close()
		return err
	}
	s.buf = s.buf[:0]
	return f.Close()
}

// close removes the run files.
func (s *sorter) close() {
	for _, r := range s.runs {
		os.Remove(r)
	}
	s.runs, s.buf = nil, nil
}

// recSource is a stream of records.
type recSource interface {
	next() (record, bool, error)
}

// sorted returns the records in order. The sorter must not be added to
// afterwards; close it when done with the stream.
func (s *sorter) sorted() (recSource, error) {
	if len(s.runs) == 0 {
		s.sortBuf()
		return &sliceSource{recs: s.buf}, nil
	}
	if len(s.buf) > 0 {
		if err := s.spill(); err != nil {
			return nil, err
		}
	}
	m := &mergeSource{cmp: s.cmp}
	for _, name := range s.runs {
		f, err := os.Open(name)
		if err != nil {
			m.closeAll()
			return nil, err
		}
		m.files = append(m.files, f)
		src := newRecReader(name, f)
		if err := m.push(src); err != nil {
			m.closeAll()
			return nil, err
		}
	}
	return m, nil
}

type sliceSource struct {
	recs []record
	i    int
}

func (s *sliceSource) next() (record, bool, error) {
	if s.i >= len(s.recs) {
		return record{}, false, nil
	}
	s.i++
	return s.recs[s.i-1], true, nil
}

// mergeSource merges sorted runs with a heap of their heads. Equal records
// come out in the order of their runs, so the merge is stable.
type mergeSource struct {
	cmp   func(a, b *record) int
	heads []mergeHead
	files []*os.File
}

type mergeHead struct {
	rec record
	src *recReader
	run int
}

func (m *mergeSource) Len() int { return len(m.heads) }
func (m *mergeSource) Less(i, j int) bool {
	if c := m.cmp(&m.heads[i].rec, &m.heads[j].rec); c != 0 {
		return c < 0
	}
	return m.heads[i].run < m.heads[j].run
}
func (m *mergeSource) Swap(i, j int) { m.heads[i], m.heads[j] = m.heads[j], m.heads[i] }
func (m *mergeSource) Push(x any)    { m.heads = append(m.heads, x.(mergeHead)) }
func (m *mergeSource) Pop() any {
	h := m.heads[len(m.heads)-1]
	m.heads = m.heads[:len(m.heads)-1]
	return h
}

func (m *mergeSource) push(src *recReader) error {
	r, ok, err := src.next()
	if err != nil || !ok {
		return err
	}
	heap.Push(m, mergeHead{rec: r, src: src, run: len(m.files)})
	return nil
}

func (m *mergeSource) next() (record, bool, error) {
	if len(m.heads) == 0 {
		m.closeAll()
		return record{}, false, nil
	}
	h := &m.heads[0]
	out := h.rec
	r, ok, err := h.src.next()
	switch {
	case err != nil:
		return record{}, false, err
	case ok:
		h.rec = r
		heap.Fix(m, 0)
	default:
		heap.Pop(m)
	}
	return out, true, nil
}

func (m *mergeSource) closeAll() {
	for _, f := range m.files {
		f.Close()
	}
	m.files = nil
}
