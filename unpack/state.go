package unpack

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"time"

	"github.com/rsdump/rsdump/internal/atomic"
	"github.com/rsdump/rsdump/verify"
)

// Files in DIR/.rsdump.
const (
	stateName = "state.json"  // what has been applied
	logName   = "written.log" // what rsdump wrote, for deletions
	lockName  = "lock"
	tmpDir    = "tmp"   // staged bitstreams, removed at the start of a run
	cacheDir  = "cache" // packages fetched over HTTP
)

// State is what DIR/.rsdump/state.json records between runs.
type State struct {
	Version int `json:"version"`
	// ResourceDumpAt is the at of the last Resource Dump applied in full:
	// the time the tree is a snapshot of.
	ResourceDumpAt time.Time `json:"resourcedump_at,omitzero"`
	// ChangeDumpUntil is the until of the last Change Dump package
	// applied: changes up to it are in the tree.
	ChangeDumpUntil time.Time `json:"changedump_until,omitzero"`
	// Source is the document last applied.
	Source string `json:"source,omitempty"`
	// Pending is set while a run applies packages, and cleared when it
	// ends; a run that finds it set knows the last one was interrupted.
	Pending bool `json:"pending,omitempty"`
	// Sync is what rsdump sync keeps between runs; nil in a tree only
	// ever unpacked. ResourceDumpAt and ChangeDumpUntil hold for the
	// Resource Lists and Change Lists it applies too.
	Sync *SyncInfo `json:"sync,omitempty"`
}

// SyncInfo is the Source a tree is a copy of, as rsdump sync (package
// replica) records it.
type SyncInfo struct {
	Source    string   `json:"source"`              // the address sync was given
	BaseURL   string   `json:"base_url"`            // the URI prefix the tree maps
	Documents []string `json:"documents,omitempty"` // the documents the last run used
	// Baseline is "resourcedump" or "resourcelist": how the tree was
	// first filled.
	Baseline string    `json:"baseline,omitempty"`
	LastRun  time.Time `json:"last_run,omitzero"`
}

// Since is the time the tree is up to: the until of the last changes
// applied, else the at of the last snapshot; zero for a tree never
// filled in full.
func (s State) Since() time.Time {
	t, _ := s.since()
	return t
}

// ReadState returns the state recorded in dir; a tree without one has
// the zero State.
func ReadState(dir string) (State, error) {
	root, err := os.OpenRoot(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return State{Version: 1}, nil
	}
	if err != nil {
		return State{}, err
	}
	defer root.Close()
	return (&dest{dir: dir, root: root}).loadState()
}

// SetSync records info in dir's state, holding the tree's lock.
func SetSync(dir string, info SyncInfo) error {
	return updateState(dir, func(s *State) { s.Sync = &info })
}

// updateState changes dir's state with change, holding the tree's lock.
func updateState(dir string, change func(*State)) error {
	d, err := openDest(dir, false, true)
	if err != nil {
		return err
	}
	defer d.close()
	s, err := d.loadState()
	if err != nil {
		return err
	}
	change(&s)
	return d.saveState(s)
}

// since is the time from which changes still have to be applied.
// Entries exactly at ChangeDumpUntil were applied (until is inclusive);
// entries exactly at a Resource Dump's at may or may not be in it, so they
// are applied again, which is idempotent.
func (s State) since() (t time.Time, inclusive bool) {
	if !s.ChangeDumpUntil.IsZero() {
		return s.ChangeDumpUntil, false
	}
	return s.ResourceDumpAt, true
}

// applies reports whether a change made at lastmod is still to apply.
func (s State) applies(lastmod time.Time) bool {
	t, inclusive := s.since()
	if t.IsZero() || lastmod.IsZero() {
		return true
	}
	return lastmod.After(t) || inclusive && lastmod.Equal(t)
}

func statePath(name string) string { return path.Join(verify.StateDir, name) }

func (d *dest) loadState() (State, error) {
	b, err := d.root.ReadFile(statePath(stateName))
	if errors.Is(err, fs.ErrNotExist) {
		return State{Version: 1}, nil
	}
	if err != nil {
		return State{}, err
	}
	var s State
	if err := json.Unmarshal(b, &s); err != nil {
		return State{}, fmt.Errorf("%s: %w", statePath(stateName), err)
	}
	return s, nil
}

// saveState writes the state under a temporary name, syncs it, renames
// it and syncs the directory (internal/atomic), so that a crash leaves
// the old state or the new one. The temporary name is fixed: the run
// holds the lock.
func (d *dest) saveState(s State) error {
	s.Version = 1
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	return atomic.WriteFileVia(d.root, statePath(stateName+".tmp"), statePath(stateName), append(b, '\n'), 0o644)
}

// record is one line of the written log: a file rsdump put in the tree.
type record struct {
	Path   string `json:"path"`
	Length int64  `json:"length"`
	Hash   string `json:"hash"`
}

// appendLog adds records to the written log and syncs it. A crash between
// a rename and its record loses the record, which makes a later deletion
// of that file refuse and report rather than remove: the safe side.
func (d *dest) appendLog(recs []record) error {
	if len(recs) == 0 {
		return nil
	}
	f, err := d.root.OpenFile(statePath(logName), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	enc := json.NewEncoder(w)
	for _, r := range recs {
		if err = enc.Encode(r); err != nil {
			break
		}
	}
	if err == nil {
		err = w.Flush()
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// logPath returns the path a written-log line records, as appendLog
// writes it, without decoding the rest: the log holds a line for every
// file ever written, and a lookup wants a few of them. ok is false when
// the path is escaped, or the line is not of that shape: decode it whole.
func logPath(line []byte) (p []byte, ok bool) {
	const prefix = `{"path":"`
	rest, found := bytes.CutPrefix(line, []byte(prefix))
	if !found {
		return nil, false
	}
	i := bytes.IndexByte(rest, '"')
	if i < 0 || bytes.IndexByte(rest[:i], '\\') >= 0 {
		return nil, false
	}
	return rest[:i], true
}

// lookupLog returns the last record of each wanted path. The log is read
// once, front to back, holding only the wanted paths: a package's
// deletions, at most 50,000.
func (d *dest) lookupLog(want map[string]bool) (map[string]record, error) {
	out := map[string]record{}
	f, err := d.root.Open(statePath(logName))
	if errors.Is(err, fs.ErrNotExist) {
		return out, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := bufio.NewReader(f)
	for {
		line, err := r.ReadBytes('\n')
		var rec record
		// A line that does not decode is the torn end of a crashed append,
		// or damage: the records around it still count.
		if p, ok := logPath(line); (!ok || want[string(p)]) && json.Unmarshal(line, &rec) == nil && want[rec.Path] {
			out[rec.Path] = rec
		}
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// recordSnapshot records in dir's state that every package of a Resource
// Dump taken at `at` is applied, as unpacking its document does.
func recordSnapshot(dir string, at time.Time) error {
	return updateState(dir, func(s *State) {
		s.ResourceDumpAt, s.ChangeDumpUntil, s.Pending = at, time.Time{}, false
	})
}
