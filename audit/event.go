package audit

import (
	"bufio"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/rsdump/rsdump/internal/appendlog"
)

// Event types, as the PREMIS event type vocabulary names them.
const (
	TypeFixity      = "fixity check"
	TypeReplacement = "replacement"
	TypeSummary     = "summary" // the log's line for a whole run
)

// Outcomes of an event.
const (
	Success = "success"
	Failure = "failure"
)

// Event is one check of one file, or one replacement of a damaged file
// by repair: a line of the log, a PREMIS event, a CSV row.
type Event struct {
	ID      string    `json:"id"`   // a UUID
	Run     string    `json:"run"`  // the run's UUID
	Type    string    `json:"type"` // TypeFixity or TypeReplacement
	Time    time.Time `json:"time"`
	Path    string    `json:"path"` // in the tree
	URI     string    `json:"uri"`  // the resource's URI
	Outcome string    `json:"outcome"`
	// Problem is, for a failure, the check that failed: missing, length,
	// hash or read (finding's Check names); for a replacement, repaired
	// or damaged (not repaired).
	Problem string `json:"problem,omitempty"`
	Length  int64  `json:"length"` // as rsdump wrote it
	Size    int64  `json:"size"`   // as found; -1 when missing
	// Expected is the hash attribute the written log records for the
	// file, the manifest's ("sha-256:…"); Found the sums computed of the
	// file, of the same algorithms.
	Expected string `json:"expected,omitempty"`
	Found    string `json:"found,omitempty"`
	Detail   string `json:"detail,omitempty"`
}

// Summary sums up a run; it is the log's last line for the run.
type Summary struct {
	Run       string    `json:"run"`
	Type      string    `json:"type"` // TypeSummary
	Dir       string    `json:"dir"`
	URI       string    `json:"uri"` // the copy's: its base URL, else its directory's file: URL
	Selection string    `json:"selection"`
	Started   time.Time `json:"started"`
	Ended     time.Time `json:"ended"`
	Agent     string    `json:"agent"`
	// Files and Bytes are what rsdump owns in the tree; Checked and
	// CheckedBytes what this run checked of it.
	Files        int   `json:"files"`
	Bytes        int64 `json:"bytes"`
	Checked      int   `json:"checked"`
	CheckedBytes int64 `json:"checked_bytes"`
	OK           int   `json:"ok"`
	// Failed are the files checked that did not hold (Missing of them
	// absent); Unverified those whose record carries no hash rsdump
	// computes, checked by length only.
	Failed     int `json:"failed"`
	Missing    int `json:"missing"`
	Unverified int `json:"unverified"`
	// Extras are files in the tree that rsdump did not write: listed
	// apart, left as they are.
	Extras int `json:"extras"`
	// Repaired and Unrepaired are, with Repair, the failed files
	// restored from the Source and those it could not restore; Fetched
	// the bytes it fetched.
	Repaired   int   `json:"repaired"`
	Unrepaired int   `json:"unrepaired"`
	Fetched    int64 `json:"fetched"`
	// NeverAudited are the files no run has checked yet, after this one;
	// Oldest the time of the oldest last check of the others.
	NeverAudited int       `json:"never_audited"`
	Oldest       time.Time `json:"oldest,omitzero"`
}

// Problems are the files that do not hold after the run: failed and not
// repaired.
func (s *Summary) Problems() int { return s.Failed - s.Repaired }

// Recorder receives a run as it goes: Begin with the summary as it
// starts (the run, the copy, the selection), every event, one at a time,
// and End with the summary once it ends. PREMIS and CSV are Recorders.
type Recorder interface {
	Begin(Summary) error
	Event(Event) error
	End(Summary) error
}

// newUUID is a random (version 4) UUID.
func newUUID() string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

// eventLog is the log, open for appending. A last line a crash cut
// short is ended first (appendlog), so that it loses only itself, not
// this run's first line.
type eventLog struct {
	f   *os.File
	w   *bufio.Writer
	enc *json.Encoder
}

func openLog(root *os.Root) (*eventLog, error) {
	if err := root.MkdirAll(statePath(""), 0o755); err != nil {
		return nil, err
	}
	f, err := appendlog.Open(root, statePath(LogName), 0, 0o644)
	if err != nil {
		return nil, err
	}
	w := bufio.NewWriterSize(f, 256<<10)
	return &eventLog{f: f, w: w, enc: json.NewEncoder(w)}, nil
}

func (l *eventLog) add(v any) error { return l.enc.Encode(v) }

// close flushes and syncs the log.
func (l *eventLog) close() error {
	err := l.w.Flush()
	if err == nil {
		err = l.f.Sync()
	}
	if cerr := l.f.Close(); err == nil {
		err = cerr
	}
	return err
}
