package unpack

import (
	"bufio"
	"cmp"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/rsdump/rsdump/internal/entryspool"
	"github.com/rsdump/rsdump/internal/extsort"
	"github.com/rsdump/rsdump/resourcesync"
)

// listSurvey is what ApplyList learns of a whole list before applying any
// of it, in memory that does not grow with the list: every entry, in
// order, in a spool on disk, and the targets in an external sort, which
// then tells which entries another one overrides. In a Change List the
// last change of a resource wins, even in a later part of an index: its
// earlier changes are superseded, never fetched (the Source serves only
// the resource's current version). In a Resource List the first entry of
// a target stands and every later one is refused. Entry numbers (seq)
// count from 0 over the whole list.
type listSurvey struct {
	spool   *entryspool.Writer[resourcesync.URL, *resourcesync.URL]
	name    string                     // the spool's file, once written
	targets *extsort.Sorter[targetRec] // (target, seq), added in seq order
	over    *extsort.Sorter[override]  // by seq
	seq     int64                      // entries spooled
}

// targetRec is an entry's target; the sort keeps entries of one target in
// list order.
type targetRec struct {
	target string
	seq    int64
}

// override is an entry another one overrides: superseded (of < 0) by a
// later change of its target, or refused as a second entry of the target
// of entry of.
type override struct{ seq, of int64 }

// listSortRun is how many records each sort holds in memory: a few MB.
// A variable for tests.
var listSortRun = 1 << 16

const (
	listSpoolPattern   = ".rsdump-list-*.spool"
	listTargetsPattern = ".rsdump-list-targets-*.tmp"
	listOverPattern    = ".rsdump-list-overrides-*.tmp"
)

func newListSurvey(dir string) (*listSurvey, error) {
	sp, err := entryspool.Create[resourcesync.URL](dir, listSpoolPattern)
	if err != nil {
		return nil, err
	}
	byTarget := func(a, b *targetRec) int { return strings.Compare(a.target, b.target) }
	bySeq := func(a, b *override) int { return cmp.Compare(a.seq, b.seq) }
	return &listSurvey{spool: sp,
		targets: extsort.New(dir, listTargetsPattern, listSortRun, byTarget, extsort.Codec[targetRec]{Append: appendTargetRec, Read: readTargetRec}),
		over:    extsort.New(dir, listOverPattern, listSortRun, bySeq, extsort.Codec[override]{Append: appendOverride, Read: readOverride}).Total(),
	}, nil
}

// close removes the survey's files.
func (s *listSurvey) close() {
	s.targets.Close()
	s.over.Close()
	if s.name == "" {
		s.spool.Abort()
		return
	}
	os.Remove(s.name)
}

// add spools an entry; target is where it lands, "" when it takes no
// part in the overrides (no target, or a change applied before).
func (s *listSurvey) add(u resourcesync.URL, target string) error {
	s.spool.Add(u)
	if target != "" {
		if err := s.targets.Add(targetRec{target, s.seq}); err != nil {
			return err
		}
	}
	s.seq++
	return nil
}

// overrides closes the spool and returns the entries overridden, in seq
// order. lastWins says a target's last entry stands (a Change List), not
// its first.
func (s *listSurvey) overrides(lastWins bool) (extsort.Source[override], error) {
	name := s.spool.Name()
	if err := s.spool.Close(entryspool.Source{}); err != nil { // read back by this run only
		return nil, err
	}
	s.name = name
	sorted, err := s.targets.Sorted()
	if err != nil {
		return nil, err
	}
	var prev targetRec // targets are never ""
	var first int64    // the seq of prev's target's first entry
	for {
		r, ok, err := sorted.Next()
		if err != nil {
			return nil, err
		}
		if !ok {
			break
		}
		switch {
		case r.target != prev.target:
			first = r.seq
		case lastWins:
			err = s.over.Add(override{seq: prev.seq, of: -1})
		default:
			err = s.over.Add(override{seq: r.seq, of: first})
		}
		if err != nil {
			return nil, err
		}
		prev = r
	}
	s.targets.Close()
	return s.over.Sorted()
}

func appendTargetRec(b []byte, r *targetRec) []byte {
	return binary.AppendUvarint(extsort.AppendString(b, r.target), uint64(r.seq))
}

func readTargetRec(r *bufio.Reader) (targetRec, error) {
	target, err := extsort.ReadString(r)
	if err != nil {
		return targetRec{}, err // io.EOF at a clean end
	}
	seq, err := binary.ReadUvarint(r)
	return targetRec{target, int64(seq)}, noEOF(err)
}

func appendOverride(b []byte, o *override) []byte {
	b = binary.AppendUvarint(b, uint64(o.seq))
	return binary.AppendVarint(b, o.of)
}

func readOverride(r *bufio.Reader) (override, error) {
	seq, err := binary.ReadUvarint(r)
	if err != nil {
		return override{}, err // io.EOF at a clean end
	}
	of, err := binary.ReadVarint(r)
	return override{int64(seq), of}, noEOF(err)
}

// noEOF turns an end of file inside a record into an error.
func noEOF(err error) error {
	if err == io.EOF {
		return fmt.Errorf("sorted list entries: %w", io.ErrUnexpectedEOF)
	}
	return err
}
