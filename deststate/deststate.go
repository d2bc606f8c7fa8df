// Package deststate owns a Destination's truth: the directory DIR/.rsdump
// of a tree that rsdump unpack or rsdump sync keeps, with state.json
// (what the tree is a copy of, and up to when), the written log (every
// file rsdump put in the tree, with its length, hashes and mtime), and the
// lock that lets one run at a time change the tree. unpack and replica
// open it once per run through Open and hold it until Close; nothing else
// reads or writes those files.
package deststate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/rsdump/rsdump/internal/atomic"
	"github.com/rsdump/rsdump/internal/flock"
)

// DirName is the directory inside the tree that holds the state; the
// tree's own files never use it.
const DirName = ".rsdump"

// Files and directories in DirName.
const (
	stateName = "state.json"
	logName   = "written.log"
	lockName  = "lock"
	// TmpDir holds staged bitstreams; Open empties it.
	TmpDir = "tmp"
	// CacheDir holds packages fetched over HTTP; Open empties it unless
	// the run resumes downloads.
	CacheDir = "cache"
)

// Path is name inside DirName, as the tree's os.Root takes it.
func Path(name string) string { return path.Join(DirName, name) }

// State is what state.json records between runs.
type State struct {
	Version int `json:"version"`
	// ResourceDumpAt is the at of the last Resource Dump (or Resource
	// List) applied in full: the time the tree is a snapshot of.
	ResourceDumpAt time.Time `json:"resourcedump_at,omitzero"`
	// ChangeDumpUntil is the until of the last changes applied: changes
	// up to it are in the tree.
	ChangeDumpUntil time.Time `json:"changedump_until,omitzero"`
	// Source is the document last applied.
	Source string `json:"source,omitempty"`
	// Pending is set while a run commits, and cleared when it ends; a run
	// that finds it set knows the last one was interrupted.
	Pending bool `json:"pending,omitempty"`
	// Sync is what rsdump sync keeps between runs; nil in a tree only
	// ever unpacked.
	Sync *SyncInfo `json:"sync,omitempty"`
	// Rollback records the last time the tree was taken back to an older
	// snapshot on purpose (--rollback).
	Rollback *Rollback `json:"rollback,omitempty"`
	// Unfinished is a snapshot a run began to make the tree exactly (a
	// re-base, a rollback) and did not complete: it failed part way (a
	// file refused, a disk error, a cancel, a kill). The tree holds part of
	// it and part of what it held before, whatever ResourceDumpAt and
	// ChangeDumpUntil say: the next sync reports it and applies the
	// snapshot again.
	Unfinished *Unfinished `json:"unfinished,omitempty"`
	// Trust is the keys the tree's Source signs with, pinned by rsdump
	// sync --trust: every later run into the tree requires their
	// signatures, given --trust or not. A state that records them is of
	// version 2.
	Trust *Trust `json:"trust,omitempty"`
}

// Trust is a pinned set of OpenPGP public keys.
type Trust struct {
	Fingerprints []string  `json:"fingerprints"` // the primary keys', upper-case hex, sorted
	Keys         string    `json:"keys"`         // the public keys, armored
	Since        time.Time `json:"since"`        // when they were pinned
}

// Unfinished is a snapshot applied in part.
type Unfinished struct {
	Document string    `json:"document"`      // the dump or list
	At       time.Time `json:"at,omitzero"`   // its at
	From     time.Time `json:"from,omitzero"` // what the tree was up to before
	// Rollback says the snapshot is older than what the tree held, and
	// was applied on purpose (--rollback): finishing it takes the tree
	// back too.
	Rollback bool      `json:"rollback,omitempty"`
	Began    time.Time `json:"began"`
}

// Describe says what u is, for messages.
func (u *Unfinished) Describe() string {
	what := "a re-base to"
	if u.Rollback {
		what = "a rollback to"
	}
	at := "a snapshot that gives no time"
	if !u.At.IsZero() {
		at = "the snapshot at " + formatTime(u.At)
	}
	return fmt.Sprintf("%s %s (%s), begun %s, did not complete", what, at, u.Document, formatTime(u.Began))
}

// SyncInfo is the Source a tree is a copy of, as rsdump sync records it.
type SyncInfo struct {
	Source  string `json:"source"`   // the address sync was given
	BaseURL string `json:"base_url"` // the URI prefix the tree maps
	// S3Endpoint is the S3-compatible server the Source was read from
	// (s3.Config.Endpoint), when it is in S3 and the run was given one.
	S3Endpoint string   `json:"s3_endpoint,omitempty"`
	Documents  []string `json:"documents,omitempty"` // the documents the last run used
	// Baseline is "resourcedump" or "resourcelist": how the tree was
	// first filled.
	Baseline string    `json:"baseline,omitempty"`
	LastRun  time.Time `json:"last_run,omitzero"`
	// TRS is the sync point of a tree kept from an OSLC Tracked Resource
	// Set: the last Change Event processed; nil for a ResourceSync
	// Source.
	TRS *TRSPoint `json:"trs,omitempty"`
}

// TRSPoint is the last Change Event of a Tracked Resource Set that the
// tree reflects: its URI (rdf:nil for a Base at the start of time with
// no event since) and trs:order.
type TRSPoint struct {
	Event string `json:"event"`
	Order int64  `json:"order"`
}

// Rollback is a snapshot applied over a later state, on purpose.
type Rollback struct {
	From     time.Time `json:"from"`     // what the tree held before
	To       time.Time `json:"to"`       // the snapshot's at
	Document string    `json:"document"` // the dump applied
	When     time.Time `json:"when"`
}

// Since is the time the tree is up to: the until of the last changes
// applied, else the at of the last snapshot; zero for a tree never
// filled in full.
func (s State) Since() time.Time {
	t, _ := s.since()
	return t
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

// Applies reports whether a change made at t is still to apply.
func (s State) Applies(t time.Time) bool {
	since, inclusive := s.since()
	if since.IsZero() || t.IsZero() {
		return true
	}
	return t.After(since) || inclusive && t.Equal(since)
}

// Describe says what the state records, for messages.
func (s State) Describe() string {
	if !s.ChangeDumpUntil.IsZero() {
		return "changes until " + formatTime(s.ChangeDumpUntil)
	}
	return "a snapshot at " + formatTime(s.ResourceDumpAt)
}

func formatTime(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// Read returns the state recorded in dir, without the lock: for a look at
// a tree, never to change it. A tree without one has the zero State.
func Read(dir string) (State, error) {
	b, err := os.ReadFile(filepath.Join(dir, DirName, stateName))
	if errors.Is(err, fs.ErrNotExist) {
		return State{Version: 1}, nil
	}
	if err != nil {
		return State{}, err
	}
	return decodeState(b, filepath.Join(dir, DirName, stateName))
}

func decodeState(b []byte, name string) (State, error) {
	var s State
	if err := json.Unmarshal(b, &s); err != nil {
		return State{}, fmt.Errorf("%s: %w", name, err)
	}
	if s.Version > 2 {
		return State{}, fmt.Errorf("%s: version %d, of a later rsdump: refused rather than read without what it adds", name, s.Version)
	}
	return s, nil
}

// Options say how Open opens a tree.
type Options struct {
	// Command names the run in the lock ("unpack", "sync"), so that a
	// second run told the tree is busy learns by what.
	Command string
	// DryRun creates nothing and takes no lock; Save then only changes
	// the State the run sees, so that a dry run follows the states a
	// real run would reach.
	DryRun bool
	// KeepCache leaves CacheDir as an interrupted run left it, for the
	// downloads in it to resume.
	KeepCache bool
	// Worker opens the tree for one worker of a sharded restore, named
	// by it (letters, digits, '-', '.', '_'): the lock is taken shared,
	// with the other workers; the worker stages in a directory of its own
	// under TmpDir and CacheDir, and clears only those; its written log is
	// its own (LogsDir/WORKER.log), which every run reads with the main
	// one, until MergeLogs moves it there; and the state is not saved
	// (Save changes only what the run sees): the merge records it.
	Worker string
}

// LogsDir holds the written logs of a sharded restore's workers.
const LogsDir = "written.d"

// ShardsDir holds a sharded restore's plan and claims, which package
// unpack reads and writes; they go once its merge is done.
const ShardsDir = "shards"

// Dir is a tree open for a run: its root, its state and its log, and
// (but in a dry run) its lock.
type Dir struct {
	dir    string
	root   *os.Root // nil in a dry run against a directory that does not exist
	lock   *os.File
	dry    bool
	fresh  bool
	worker string     // a sharded restore's worker; "" for a run of its own
	mu     sync.Mutex // state, saved and fresh: a run's goroutines read and save them
	saved  bool       // the run has saved the state
	onDisk []byte     // state.json as the run read it (encoded as Save would) or last wrote it
	state  State
	// created: Open made the tree's directory; hadDir: DirName was there.
	created, hadDir bool
}

// Open opens dir for a run: it creates dir and DirName, takes the lock,
// clears what a killed run left to clear, and reads the state. dir is
// made absolute, so that messages name it wherever they are read.
func Open(dir string, o Options) (*Dir, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if o.Worker != "" && (strings.ContainsFunc(o.Worker, func(r rune) bool {
		return !(r == '-' || r == '.' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z')
	}) || o.Worker[0] == '.' || o.DryRun) {
		return nil, fmt.Errorf("worker %q: not a worker's name, or a dry run", o.Worker)
	}
	d := &Dir{dir: abs, dry: o.DryRun, worker: o.Worker}
	if _, err := os.Lstat(abs); errors.Is(err, fs.ErrNotExist) {
		d.created = true
	}
	if err := d.open(o); err != nil {
		d.Close()
		return nil, err
	}
	return d, nil
}

func (d *Dir) open(o Options) error {
	if d.dry {
		root, err := os.OpenRoot(d.dir)
		if errors.Is(err, fs.ErrNotExist) {
			d.fresh, d.state = true, State{Version: 1}
			return nil
		}
		if err != nil {
			return err
		}
		d.root = root
		return d.load()
	}
	if err := os.MkdirAll(d.dir, 0o755); err != nil {
		return err
	}
	root, err := os.OpenRoot(d.dir)
	if err != nil {
		return err
	}
	d.root = root
	if _, err := root.Lstat(DirName); err == nil {
		d.hadDir = true
	}
	if err := root.MkdirAll(DirName, 0o755); err != nil {
		return fmt.Errorf("%s: %w", d.dir, err)
	}
	if d.lock, err = takeLock(root, Path(lockName), o.Command, d.worker != ""); err != nil {
		return fmt.Errorf("%s: %w", d.dir, err)
	}
	if err := d.clear(o.KeepCache); err != nil {
		return err
	}
	return d.load()
}

// clear removes what a killed run left: staged bitstreams never renamed,
// and, unless they are to resume, packages half downloaded.
//
// A worker clears its own directories only: the others are staging in
// theirs.
func (d *Dir) clear(keepCache bool) error {
	dirs := []string{d.Tmp(), d.Cache()}
	if keepCache {
		dirs = dirs[:1]
	}
	for _, dir := range dirs {
		if err := d.root.RemoveAll(dir); err != nil {
			return err
		}
	}
	for _, dir := range []string{d.Tmp(), d.Cache()} {
		if err := d.root.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	return nil
}

// Tmp is the run's staging directory, relative to the tree: TmpDir, or a
// worker's own under it.
func (d *Dir) Tmp() string { return d.own(TmpDir) }

// Cache is the run's download cache, relative to the tree: CacheDir, or
// a worker's own under it.
func (d *Dir) Cache() string { return d.own(CacheDir) }

func (d *Dir) own(dir string) string {
	if d.worker != "" {
		return Path(path.Join(dir, "w-"+d.worker))
	}
	return Path(dir)
}

// Worker is the worker the tree was opened for; "" for a run of its own.
func (d *Dir) Worker() string { return d.worker }

// DropCache empties CacheDir: what downloads of earlier runs kept to
// resume (a package's checkpoint, its kept stage). sync calls it after a
// run that applied everything: a package it did not use is no longer the
// Source's, and would otherwise stay, gigabytes of it, for good.
func (d *Dir) DropCache() error {
	if err := d.root.RemoveAll(d.Cache()); err != nil {
		return fmt.Errorf("%s: %w", d.dir, err)
	}
	return d.root.MkdirAll(d.Cache(), 0o755)
}

// load reads the state, and notes whether rsdump has written anything in
// the tree before.
func (d *Dir) load() error {
	b, err := d.root.ReadFile(Path(stateName))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		d.state = State{Version: 1}
		_, lerr := d.root.Lstat(Path(logName))
		_, werr := d.root.Lstat(Path(LogsDir))
		d.fresh = errors.Is(lerr, fs.ErrNotExist) && errors.Is(werr, fs.ErrNotExist)
		return nil
	case err != nil:
		return err
	}
	if d.state, err = decodeState(b, filepath.Join(d.dir, DirName, stateName)); err != nil {
		return err
	}
	// What the file says, as Save would write it: a file of another
	// layout (an earlier rsdump's, one edited by hand) that says the same
	// is left as it is by a run that changes nothing.
	s := d.state
	d.onDisk, err = encodeState(&s)
	return err
}

// Path is the tree's absolute path.
func (d *Dir) Path() string { return d.dir }

// Root is the tree, for every file operation in it; nil in a dry run
// against a directory that does not exist.
func (d *Dir) Root() *os.Root { return d.root }

// DryRun says whether the run writes nothing.
func (d *Dir) DryRun() bool { return d.dry }

// Fresh says whether rsdump has never written in the tree: it had no
// state and no written log when opened, and the run has appended nothing
// to the log since (a run that unpacks two dumps in turn meets its own
// files in the second). The tree may still hold files of its own.
func (d *Dir) Fresh() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.fresh
}

// State is the state as the run left it so far.
func (d *Dir) State() State {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.state
}

// Save records s: under a temporary name, synced, renamed and the
// directory synced (internal/atomic), so that a crash leaves the old
// state or the new one. In a dry run only the State the run sees changes.
func (d *Dir) Save(s State) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.dry || d.worker != "" {
		s.Version = version(s)
		d.state, d.saved = s, true
		return nil
	}
	b, err := encodeState(&s)
	if err != nil {
		return err
	}
	d.state = s
	if bytes.Equal(b, d.onDisk) {
		return nil // the state as it is: a run that changed nothing leaves the file as it was
	}
	// The temporary name is fixed: the run holds the lock.
	if err := atomic.WriteFileVia(d.root, Path(stateName+".tmp"), Path(stateName), b, 0o644); err != nil {
		return err
	}
	d.onDisk, d.saved = b, true
	return nil
}

// encodeState sets s's version and encodes it as state.json holds it.
func encodeState(s *State) ([]byte, error) {
	s.Version = version(*s)
	b, err := json.MarshalIndent(s, "", "  ")
	return append(b, '\n'), err
}

// version is the version of state.json that s needs.
func version(s State) int {
	if s.Trust != nil {
		return 2 // pins keys, which an rsdump of version 1 would ignore
	}
	return 1
}

// Amend changes the state the run sees without saving it: the change is
// recorded by the run's next Save, so that a run that fails before it
// commits anything (and so before it saves) leaves state.json as it was.
func (d *Dir) Amend(change func(*State)) {
	d.mu.Lock()
	defer d.mu.Unlock()
	change(&d.state)
}

// Saved says whether the run has saved the state: whether it committed
// anything to the tree.
func (d *Dir) Saved() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.saved
}

// Update changes the state with change and saves it.
func (d *Dir) Update(change func(*State)) error {
	s := d.State()
	change(&s)
	return d.Save(s)
}

// CloseUnused is Close of a run that failed: when it wrote nothing in the
// tree (no state saved, no written log), what Open created goes too
// (DirName, and the tree's directory when Open made it and it is empty),
// so that a refused first run leaves the Destination as it found it.
func (d *Dir) CloseUnused() {
	// A sharded restore's worker shares DirName with the others: it is
	// never its own to remove.
	keep := d.dry || d.root == nil || d.hadDir || d.Saved() || d.worker != ""
	if !keep {
		_, err := d.root.Lstat(Path(logName))
		keep = !errors.Is(err, fs.ErrNotExist)
	}
	if !keep {
		d.root.RemoveAll(DirName) // under the lock, which goes with it
	}
	d.Close()
	if !keep && d.created {
		os.Remove(d.dir) // only when empty
	}
}

// Close releases the lock and the tree.
func (d *Dir) Close() {
	if d.lock != nil {
		flock.Close(d.lock)
		d.lock = nil
	}
	if d.root != nil {
		d.root.Close()
		d.root = nil
	}
}

// WalkTree walks the tree at dir in lexical order, as filepath.WalkDir
// does, and calls fn with each entry that is not a directory, by its
// slash-separated path relative to dir: the tree as the Source's files,
// rsdump's state directory (DirName) left out. A directory below the root
// that cannot be read is given to fn with its error and a nil d, and fn
// says whether that ends the walk (an audit goes on: the files it owns
// there fail to be read when checked); fn's error ends it.
func WalkTree(ctx context.Context, dir string, fn func(rel string, d fs.DirEntry, err error) error) error {
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil && p == dir {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		switch {
		case err != nil:
			return fn(rel, nil, err)
		case d.IsDir() && rel == DirName:
			return filepath.SkipDir
		case d.IsDir():
			return nil
		}
		return fn(rel, d, nil)
	})
}
