package audit

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
	"time"

	"github.com/rsdump/rsdump/deststate"
	"github.com/rsdump/rsdump/internal/atomic"
)

// Dir is the directory inside the tree's state directory that holds the
// audit's files.
const Dir = "audit"

// Files in Dir.
const (
	// LogName is the log of every check and every run, JSON Lines,
	// appended to.
	LogName = "log.jsonl"
	// RecordName records when each file was last checked, JSON Lines in
	// path order after a header line; replaced whole by every run.
	RecordName = "last-audited.jsonl"
)

func statePath(name string) string { return deststate.Path(path.Join(Dir, name)) }

// recordHeader is the first line of the record.
type recordHeader struct {
	Version int   `json:"version"`
	Runs    int64 `json:"runs"` // runs recorded so far
}

// recordLine is a line of the record: a file, the version of it last
// checked (a fingerprint of its length and hashes), the run that first
// saw that version and the run that last checked it, when, and whether
// that check failed.
type recordLine struct {
	Path   string    `json:"path"`
	V      string    `json:"v"`
	Seen   int64     `json:"seen"`
	Run    int64     `json:"run,omitempty"`
	At     time.Time `json:"at,omitzero"`
	Failed bool      `json:"failed,omitempty"`
}

// recordReader reads the record, in path order. A line out of order or
// that does not decode is passed over: the files it names count as never
// audited, the safe side.
type recordReader struct {
	f    *os.File
	r    *bufio.Reader
	last string
	head recordLine
	have bool
	err  error
}

// openRecord opens the record of root's tree and reads its header; a
// tree never audited has none, and zero runs.
func openRecord(root *os.Root) (*recordReader, int64, error) {
	f, err := root.Open(statePath(RecordName))
	if errors.Is(err, fs.ErrNotExist) {
		return &recordReader{}, 0, nil
	}
	if err != nil {
		return nil, 0, err
	}
	rr := &recordReader{f: f, r: bufio.NewReaderSize(f, 256<<10)}
	line, err := rr.r.ReadBytes('\n')
	var h recordHeader
	if err != nil && err != io.EOF || json.Unmarshal(line, &h) != nil || h.Version != 1 {
		f.Close()
		return nil, 0, fmt.Errorf("%s: not an audit record of this rsdump (its header: %.80q)", RecordName, line)
	}
	rr.advance()
	return rr, h.Runs, nil
}

// advance reads the next line in order into head.
func (rr *recordReader) advance() {
	rr.have = false
	for rr.f != nil && rr.err == nil {
		line, err := rr.r.ReadBytes('\n')
		var l recordLine
		if json.Unmarshal(line, &l) == nil && l.Path != "" && l.Path > rr.last {
			rr.head, rr.have, rr.last = l, true, l.Path
			return
		}
		if err != nil {
			if err != io.EOF {
				rr.err = fmt.Errorf("%s: %w", RecordName, err)
			}
			return
		}
	}
}

// find returns the record's line for p, passing over the lines before
// it; p must not come before a path asked for earlier.
func (rr *recordReader) find(p string) (recordLine, bool) {
	for rr.have && strings.Compare(rr.head.Path, p) < 0 {
		rr.advance()
	}
	if rr.have && rr.head.Path == p {
		return rr.head, true
	}
	return recordLine{}, false
}

func (rr *recordReader) close() {
	if rr.f != nil {
		rr.f.Close()
	}
}

// recordWriter writes a new record under a temporary name; commit
// replaces the old one with it (internal/atomic), so that a crash leaves
// the old record or the new, never half of one.
type recordWriter struct {
	af  *atomic.File
	w   *bufio.Writer
	enc *json.Encoder
}

func createRecord(root *os.Root, runs int64) (*recordWriter, error) {
	if err := root.MkdirAll(statePath(""), 0o755); err != nil {
		return nil, err
	}
	af, err := atomic.CreateVia(root, statePath(RecordName+".tmp"), statePath(RecordName), 0o644)
	if err != nil {
		return nil, err
	}
	w := bufio.NewWriterSize(af, 256<<10)
	rw := &recordWriter{af: af, w: w, enc: json.NewEncoder(w)}
	if err := rw.enc.Encode(recordHeader{Version: 1, Runs: runs}); err != nil {
		af.Abort()
		return nil, err
	}
	return rw, nil
}

func (rw *recordWriter) add(e *entry) error {
	return rw.enc.Encode(recordLine{Path: e.Path, V: fingerprint(e.Record), Seen: e.Seen, Run: e.Run, At: e.At, Failed: e.Failed})
}

func (rw *recordWriter) commit() error {
	if err := rw.w.Flush(); err != nil {
		rw.af.Abort()
		return err
	}
	return rw.af.Commit()
}

func (rw *recordWriter) abort() { rw.af.Abort() }
