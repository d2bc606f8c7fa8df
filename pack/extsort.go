package pack

import (
	"bufio"
	"errors"
	"io"
	"strings"
	"sync"

	"github.com/rsdump/rsdump/internal/extsort"
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
type sorter struct{ s *extsort.Sorter[record] }

// recordCodec stores records in run files as the lines a recWriter writes.
var recordCodec = extsort.Codec[record]{
	Append: func(b []byte, r *record) []byte { return r.appendTo(b) },
	Read:   readRecord,
}

func readRecord(br *bufio.Reader) (record, error) {
	line, err := br.ReadString('\n')
	if errors.Is(err, io.EOF) && line == "" {
		return record{}, io.EOF
	}
	if err != nil && !errors.Is(err, io.EOF) {
		return record{}, err
	}
	return parseRecord(strings.TrimSuffix(line, "\n"))
}

func newSorter(dir string, cmp func(a, b *record) int) *sorter {
	return &sorter{s: extsort.New(dir, sortTempPattern, sortRun, cmp, recordCodec)}
}

func (s *sorter) add(r record) error { return s.s.Add(r) }

// close removes the run files.
func (s *sorter) close() { s.s.Close() }

// recSource is a stream of records.
type recSource interface {
	next() (record, bool, error)
}

// sorted returns the records in order. The sorter must not be added to
// afterwards; close it when done with the stream.
func (s *sorter) sorted() (recSource, error) {
	src, err := s.s.Sorted()
	if err != nil {
		return nil, err
	}
	return sortedSource{src}, nil
}

type sortedSource struct{ extsort.Source[record] }

func (s sortedSource) next() (record, bool, error) { return s.Next() }

// aheadSource reads a recSource on its own goroutine, batches ahead of
// its reader: the baseline's reading and parsing overlap the walk it is
// joined with. Memory holds aheadBatches batches at most.
type aheadSource struct {
	c    chan recBatch
	free chan []record // batches read, to reuse
	stop chan struct{}
	done chan struct{}
	once sync.Once
	cur  recBatch
	i    int
}

type recBatch struct {
	recs []record
	err  error // after recs
	end  bool  // no record after recs
}

const aheadBatch, aheadBatches = 256, 4

func readRecsAhead(src recSource) *aheadSource {
	a := &aheadSource{c: make(chan recBatch, aheadBatches), free: make(chan []record, 2), stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(a.done)
		for {
			var b recBatch
			select {
			case b.recs = <-a.free:
			default:
				b.recs = make([]record, 0, aheadBatch)
			}
			for len(b.recs) < aheadBatch && b.err == nil && !b.end {
				r, ok, err := src.next()
				switch {
				case err != nil:
					b.err = err
				case !ok:
					b.end = true
				default:
					b.recs = append(b.recs, r)
				}
			}
			select {
			case a.c <- b:
			case <-a.stop:
				return
			}
			if b.err != nil || b.end {
				return
			}
		}
	}()
	return a
}

func (a *aheadSource) next() (record, bool, error) {
	for a.i == len(a.cur.recs) {
		switch {
		case a.cur.err != nil:
			return record{}, false, a.cur.err
		case a.cur.end:
			return record{}, false, nil
		}
		if a.cur.recs != nil {
			select {
			case a.free <- a.cur.recs[:0]:
			default:
			}
		}
		a.cur, a.i = <-a.c, 0
	}
	a.i++
	return a.cur.recs[a.i-1], true, nil
}

// close stops the reading; the source it reads may then be closed.
func (a *aheadSource) close() {
	a.once.Do(func() { close(a.stop) })
	<-a.done
}
