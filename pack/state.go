package pack

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/rsdump/rsdump/internal/sink"
)

// StateName is the file every pack leaves in its output directory, as
// its last step: what the Destination has once it applied everything pack
// wrote there. A --changes run compares the source with it unless --since
// names another baseline. Its first line is a JSON header (version, time:
// the at of a Resource Dump or the until of the last Change Dump run,
// kind, base_url, and list: the documents of the Resource List written
// with it, see listDoc); every other line is one file, in walk order, with
// tab-separated fields: path, length, mtime in Unix nanoseconds, mode,
// hash attribute, media type, and three fields unused here.
const StateName = ".rsdump-pack.state"

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

func (s *stateWriter) commit() error {
	if s.spool != nil {
		s.abort()
		return errors.New("state: commit before prepare")
	}
	if err := s.w.flush(); err != nil {
		s.af.Abort()
		return err
	}
	return s.af.Commit()
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

// stateSource reads a state file, checking that it is in walk order.
type stateSource struct {
	f    *os.File
	r    *recReader
	last string
	n    int
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
	if err == nil && (head.Version != 1 || head.Time.IsZero()) {
		err = errors.New("unknown version or no time")
	}
	if err != nil {
		f.Close()
		return nil, head, fmt.Errorf("%s: not a pack state file: %v", path, err)
	}
	return &stateSource{f: f, r: newRecReader(path, br)}, head, nil
}

func (s *stateSource) next() (record, bool, error) {
	r, ok, err := s.r.next()
	if err != nil || !ok {
		return r, ok, err
	}
	if s.n > 0 && comparePaths(s.last, r.Rel) >= 0 {
		return r, false, fmt.Errorf("%s: line %d: %s is out of walk order", s.r.name, s.r.line+1, r.Rel)
	}
	s.last, s.n = r.Rel, s.n+1
	return r, true, nil
}

func (s *stateSource) close() { s.f.Close() }

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
