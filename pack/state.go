package pack

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"slices"
	"time"

	"github.com/rsdump/rsdump/internal/sink"
	"github.com/rsdump/rsdump/resourcesync"
)

// StateName is the file every pack leaves in its output directory, as
// its last step: what the Destination has once it applied everything pack
// wrote there. A --changes run compares the source with it unless --since
// names another baseline. Its first line is a JSON header (version, time:
// the at of a Resource Dump or the until of the last Change Dump run,
// kind, base_url, and list: the documents of the Resource List written
// with it, see listDoc); every other line is one file, in walk order, with
// tab-separated fields: path, length, mtime in Unix nanoseconds, mode,
// hash attribute, media type, and three fields unused here. A --changes
// run into the same output adds what changed to the delta beside it
// (deltaSuffix) rather than writing it again.
const StateName = ".rsdump-pack.state"

// stateVersion is the version of the state pack writes: 2, a state that
// may have a delta beside it, which an rsdump before it (version 1 only)
// refuses rather than reading the state without its delta. A state of
// version 1 is read, and a run from it writes the whole state again.
const stateVersion = 2

type stateHead struct {
	Version int       `json:"version"`
	Kind    string    `json:"kind"` // the capability of the document written: resourcedump or changedump
	Time    time.Time `json:"time"`
	BaseURL string    `json:"base_url"`
	List    []listDoc `json:"list,omitempty"`
}

// stateWriter writes a state file under a temporary name; commit gives it
// its final name. A state written in the same pass as its Resource List
// (newStateSpool) keeps its files in a scratch file until the list is
// written, since its header names the list's documents.
type stateWriter struct {
	out   *output
	af    sink.File // the state, its header written
	spool *os.File  // or the scratch file, until commit
	w     *recWriter
	last  []byte
	n     int
}

func newStateWriter(out *output, head stateHead) (*stateWriter, error) {
	af, err := out.Create(out.ctx, StateName)
	if err != nil {
		return nil, err
	}
	s := &stateWriter{out: out, af: af, w: newRecWriter(af)}
	b, _ := json.Marshal(head)
	if _, err := s.w.w.Write(append(b, '\n')); err != nil {
		af.Abort()
		return nil, err
	}
	return s, nil
}

// newStateSpool starts a state whose header commitAs gives.
func newStateSpool(out *output) (*stateWriter, error) {
	f, err := os.CreateTemp(out.scratch, ".rsdump-state-*.tmp")
	if err != nil {
		return nil, err
	}
	return &stateWriter{out: out, spool: f, w: newRecWriter(f)}, nil
}

// add appends a file; files come in walk order, each once.
func (s *stateWriter) add(r record) error {
	if s.n > 0 && comparePaths(s.last, r.Rel) >= 0 {
		return fmt.Errorf("%s: %s after %s, out of walk order", StateName, r.Rel, s.last)
	}
	s.last, s.n = append(s.last[:0], r.Rel...), s.n+1
	r.Change, r.Datetime, r.Seq = "", 0, 0
	return s.w.write(&r)
}

// addLine appends a file of the walk kept as it was (keptLine): its
// line, as the state has it but for the last field, written 0.
func (s *stateWriter) addLine(rel, line []byte) error {
	if s.n > 0 && comparePaths(s.last, rel) >= 0 {
		return fmt.Errorf("%s: %s after %s, out of walk order", StateName, rel, s.last)
	}
	s.last, s.n = append(s.last[:0], rel...), s.n+1
	s.w.w.Write(line)
	_, err := s.w.w.WriteString("0\n")
	return err
}

// deleted: a file not in the state is not written.
func (s *stateWriter) deleted(string) error { return nil }

// commit puts the state in place, and then removes the delta of the one
// it replaces, which a delta names by its base (see deltaSuffix): one
// left behind is ignored.
func (s *stateWriter) commit() error {
	if s.spool != nil {
		s.abort()
		return errors.New("state: commit before prepare")
	}
	if err := s.w.flush(); err != nil {
		s.af.Abort()
		return err
	}
	if err := s.af.Commit(); err != nil {
		return err
	}
	return s.out.remove(StateName + deltaSuffix)
}

// prepare writes the state newStateSpool started, with its header, under
// its temporary name, and syncs it, so that commit is left little to do
// when it renames it.
func (s *stateWriter) prepare(head stateHead) error {
	if err := s.w.flush(); err != nil {
		return err
	}
	af, err := s.out.Create(s.out.ctx, StateName)
	if err != nil {
		return err
	}
	b, _ := json.Marshal(head)
	if _, err = af.Write(append(b, '\n')); err == nil {
		if _, err = s.spool.Seek(0, io.SeekStart); err == nil {
			_, err = io.Copy(copying(af), s.spool)
		}
	}
	if f, ok := af.(interface{ File() *os.File }); ok && err == nil {
		err = f.File().Sync()
	}
	if err != nil {
		af.Abort()
		return err
	}
	s.dropSpool()
	s.af, s.w = af, newRecWriter(af)
	return nil
}

// commitAs writes the state newStateSpool started, with its header.
func (s *stateWriter) commitAs(head stateHead) error {
	if err := s.prepare(head); err != nil {
		s.abort()
		return err
	}
	return s.commit()
}

func (s *stateWriter) dropSpool() {
	if s.spool != nil {
		s.spool.Close()
		os.Remove(s.spool.Name())
		s.spool = nil
	}
}

func (s *stateWriter) abort() {
	s.dropSpool()
	if s.af != nil {
		s.af.Abort()
	}
}

// stateSource reads a state file, checking that it is in walk order,
// with the delta beside it (stateDelta) laid over it: the files as the
// last run that wrote either left them.
type stateSource struct {
	f     *os.File
	r     *recReader
	last  string
	n     int
	delta *stateDelta
	di    int    // the next of delta.recs
	base  record // the base's next file, when have
	have  bool
	ended bool  // the base's files ran out
	lines int64 // the base's files read
}

func openState(path string) (*stateSource, stateHead, error) {
	var head stateHead
	f, err := os.Open(path)
	if err != nil {
		return nil, head, err
	}
	br := bufio.NewReader(f)
	line, err := br.ReadBytes('\n')
	if err == nil {
		err = json.Unmarshal(line, &head)
	}
	if err == nil && (head.Version != 1 && head.Version != stateVersion || head.Time.IsZero()) {
		err = errors.New("unknown version or no time")
	}
	d := &stateDelta{}
	if err == nil && head.Version == stateVersion {
		var fi os.FileInfo
		if fi, err = f.Stat(); err == nil {
			d, err = readDelta(path+deltaSuffix, deltaBase{Size: fi.Size(), CRC: crc32.Checksum(line, crcTable)})
		}
	}
	if err == nil && d.head != nil {
		if d.head.Version != stateVersion || d.head.Time.IsZero() || d.head.BaseURL != head.BaseURL {
			err = fmt.Errorf("%s: unknown version, no time or another base URL", path+deltaSuffix)
		} else {
			head = *d.head
		}
	}
	if err != nil {
		f.Close()
		return nil, head, fmt.Errorf("%s: not a pack state file: %v", path, err)
	}
	return &stateSource{f: f, r: newRecReader(path, br), delta: d}, head, nil
}

func (s *stateSource) next() (record, bool, error) {
	if s.delta.recs == nil {
		if err := s.delta.parse(); err != nil {
			return record{}, false, err
		}
	}
	for {
		if !s.have && !s.ended {
			r, ok, err := s.r.next()
			if err != nil {
				return r, false, err
			}
			s.base, s.have, s.ended = r, ok, !ok
			if ok {
				s.lines++
			}
		}
		var r record
		switch {
		case s.di < len(s.delta.recs) && (!s.have || comparePaths(s.delta.recs[s.di].Rel, s.base.Rel) <= 0):
			r = s.delta.recs[s.di]
			s.di++
			if s.have && r.Rel == s.base.Rel {
				s.have = false
			}
			if r.Change == resourcesync.ChangeDeleted {
				continue
			}
		case s.have:
			r, s.have = s.base, false
			if s.n > 0 && comparePaths(s.last, r.Rel) >= 0 {
				return r, false, fmt.Errorf("%s: line %d: %s is out of walk order", s.r.name, s.r.line+1, r.Rel)
			}
		default:
			return record{}, false, nil
		}
		s.last, s.n = r.Rel, s.n+1
		return r, true, nil
	}
}

func (s *stateSource) close() { s.f.Close() }

// The delta of a state: a --changes run into the output it reads its
// state from appends the files it changed to the file beside the state,
// named so with deltaSuffix (an append log of the output, sink.Append),
// rather than writing the whole state again (15 MB for 100,000 files,
// written and synced each run): the state and its delta grow by what
// changed, not by the tree. A run whose delta would pass deltaLimit
// writes the whole state, and removes the delta.
//
// The delta is a series of batches, one a run, each appended whole and
// synced after the run's Resource List, as the state is renamed after
// it: the run's files, as record lines in walk order (a deletion has its
// change field deleted), then one line of JSON (deltaTrailer, which has
// no tab, as a record line does): the state's header after the run, the
// base the batch applies to (its length and the CRC-32C of its header
// line), and where the batch's record lines start in the delta, how many
// there are and their CRC-32C. A batch counts only with its trailer:
// bytes torn by a kill, or a batch written for another base (a state
// written since, whose run was killed before it removed the delta), are
// passed over, and a later batch counts.
const deltaSuffix = ".delta"

type deltaBase struct {
	Size int64  `json:"size"` // the base state file's length
	CRC  uint32 `json:"crc"`  // CRC-32C of its header line
}

type deltaTrailer struct {
	stateHead
	Base  deltaBase `json:"base"`
	From  int64     `json:"from"` // the offset of the batch's first line
	Lines int       `json:"lines"`
	CRC   uint32    `json:"crc"`
}

// stateDelta is what a delta file holds for a base.
type stateDelta struct {
	takes bool // the base takes a delta: it is of stateVersion
	base  deltaBase
	head  *stateHead // the last batch's; nil without one
	size  int64      // the offset past the last batch that counts
	bytes int64      // the file's length
	torn  bool       // it ends within a line
	// The record lines of the batches that count, parsed by parse, the
	// first time the state's files are read (on the goroutine reading
	// them ahead of the walk, not before the walk starts), into recs:
	// the last version of each file, in walk order.
	lines [][]byte
	recs  []record
}

// deltaLimit is the most a delta may hold, in bytes, beside a base of
// baseSize bytes: an eighth of it (a run reads the delta into memory,
// and each reads it all), between 64 KiB and 8 MiB.
var deltaLimit = func(baseSize int64) int64 { return min(max(baseSize/8, 64<<10), 8<<20) }

// readDelta reads the delta at path for base: the batches that count,
// checked by their trailers; none when there is no file.
func readDelta(path string, base deltaBase) (*stateDelta, error) {
	d := &stateDelta{takes: true, base: base}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return d, nil
	}
	if err != nil {
		return nil, err
	}
	d.bytes, d.torn = int64(len(b)), len(b) > 0 && b[len(b)-1] != '\n'
	var lines [][]byte // since the last batch that counts
	for off := 0; off < len(b); {
		end := bytes.IndexByte(b[off:], '\n')
		if end < 0 {
			break
		}
		line, next := b[off:off+end], off+end+1
		if bytes.IndexByte(line, '\t') >= 0 {
			lines = append(lines, line)
			off = next
			continue
		}
		var t deltaTrailer
		if len(line) > 0 && line[0] == '{' && json.Unmarshal(line, &t) == nil && t.Base == base &&
			t.From >= d.size && t.From <= int64(off) && t.Lines >= 0 && t.Lines <= len(lines) && t.CRC == crc32.Checksum(b[t.From:off], crcTable) {
			// The batch's lines are the last t.Lines read, if they start
			// at t.From (bytes torn off a line before them join the first,
			// which then starts before).
			batch := lines[len(lines)-t.Lines:]
			if t.Lines == 0 && t.From == int64(off) || t.Lines > 0 && &batch[0][0] == &b[t.From] {
				d.lines = append(d.lines, batch...)
				d.head, d.size = &t.stateHead, int64(next)
			}
		}
		lines, off = lines[:0], next
	}
	return d, nil
}

// parse gives recs the files of the batches that count, the last version
// of each, in walk order.
func (d *stateDelta) parse() error {
	all := make([]record, 0, len(d.lines))
	for _, line := range d.lines {
		r, err := parseRecord(string(line))
		if err != nil {
			return fmt.Errorf("%s: %w", StateName+deltaSuffix, err)
		}
		all = append(all, r)
	}
	// Stable: the batches' order decides between versions of one file.
	slices.SortStableFunc(all, func(a, b record) int { return comparePaths(a.Rel, b.Rel) })
	d.recs = all[:0]
	for i, r := range all {
		if i+1 < len(all) && all[i+1].Rel == r.Rel {
			continue
		}
		d.recs = append(d.recs, r)
	}
	d.lines = nil
	return nil
}

// deltaWriter gathers a run's batch for the delta of the state it read:
// the files whose record differs from the baseline's, and deletions; it
// takes the calls a stateWriter does (stateOut). A batch holds no more
// than deltaLimit allows (newChangeState), and is appended whole.
type deltaWriter struct {
	out   *output
	d     *stateDelta
	buf   []byte
	lines int
	last  []byte
	head  stateHead
}

func (w *deltaWriter) put(r record) error {
	if w.lines > 0 && comparePaths(w.last, r.Rel) >= 0 {
		return fmt.Errorf("%s: %s after %s, out of walk order", StateName+deltaSuffix, r.Rel, w.last)
	}
	w.last, w.lines = append(w.last[:0], r.Rel...), w.lines+1
	w.buf = r.appendTo(w.buf)
	return nil
}

// add records a file whose record is new or differs from the baseline's.
func (w *deltaWriter) add(r record) error {
	r.Change, r.Datetime, r.Seq = "", 0, 0
	return w.put(r)
}

// addLine: a file kept as the baseline has it is not written.
func (w *deltaWriter) addLine(_, _ []byte) error { return nil }

// deleted records a file of the baseline that is gone.
func (w *deltaWriter) deleted(rel string) error {
	return w.put(record{Rel: rel, Change: resourcesync.ChangeDeleted})
}

func (w *deltaWriter) prepare(head stateHead) error {
	w.head = head
	return nil
}

// commit appends the batch with its trailer, which makes it count, on a
// line of its own after whatever a killed run left. A delta in which no
// batch counted is removed first.
func (w *deltaWriter) commit() error {
	name := StateName + deltaSuffix
	from := w.d.bytes
	var b []byte
	switch {
	case w.d.size == 0 && w.d.bytes > 0:
		if err := w.out.remove(name); err != nil {
			return err
		}
		from = 0
	case w.d.torn:
		b, from = append(b, '\n'), from+1
	}
	t := deltaTrailer{stateHead: w.head, Base: w.d.base, From: from, Lines: w.lines, CRC: crc32.Checksum(w.buf, crcTable)}
	j, _ := json.Marshal(t)
	b = append(append(append(b, w.buf...), j...), '\n')
	return w.out.Append(w.out.ctx, name, b)
}

func (w *deltaWriter) commitAs(head stateHead) error {
	w.prepare(head)
	return w.commit()
}

func (w *deltaWriter) abort() {}

// stateOut is where a --changes run writes its new state: the whole of
// it (stateWriter), or what changed (deltaWriter).
type stateOut interface {
	add(record) error
	addLine(rel, state []byte) error
	deleted(rel string) error
	prepare(stateHead) error
	commit() error
	commitAs(stateHead) error
	abort()
}

// isStateFile reports whether the file at path starts like a state file
// rather than an XML document.
func isStateFile(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	var b [1]byte
	_, err = io.ReadFull(f, b[:])
	return err == nil && b[0] == '{'
}
