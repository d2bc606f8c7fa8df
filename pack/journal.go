package pack

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// journalName is the file in the output directory that lets an
// interrupted pack resume: one JSON line per committed package. It is
// removed when the dump document has been written.
const journalName = ".rsdump-pack.journal"

type journalHead struct {
	Version int       `json:"version"`
	Options string    `json:"options"`
	At      time.Time `json:"at"`
}

type journalEntry struct {
	Plan string      `json:"plan"`
	Info PackageInfo `json:"info"`
}

type journal struct {
	path    string
	f       *os.File
	head    journalHead
	entries map[string]journalEntry // by package name
}

// openJournal loads the journal of an earlier run with the same options,
// or starts a new one. at is the snapshot time of this run; an earlier
// run's time wins unless the caller pinned one.
func openJournal(dir, options string, at time.Time, pinned bool, k *dumpKind) (*journal, error) {
	j := &journal{path: filepath.Join(dir, journalName), entries: map[string]journalEntry{}}
	if old, entries, err := readJournal(j.path); err == nil && old.Options == options && (!pinned || old.At.Equal(at)) {
		j.head, j.entries = old, entries
		f, err := os.OpenFile(j.path, os.O_WRONLY|os.O_APPEND, 0)
		j.f = f
		return j, err
	}
	j.head = journalHead{Version: 1, Options: options, At: at}
	// A fresh run replaces packages one by one: the Resource Dump of an
	// earlier run must not go on listing them meanwhile. A Change Dump
	// run writes packages under new names, and the Change Dump goes on
	// listing the earlier ones.
	if !k.changes() {
		if err := os.Remove(filepath.Join(dir, DumpName)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
	}
	f, err := os.Create(j.path)
	if err != nil {
		return nil, err
	}
	j.f = f
	return j, j.append(j.head)
}

func readJournal(path string) (journalHead, map[string]journalEntry, error) {
	var head journalHead
	f, err := os.Open(path)
	if err != nil {
		return head, nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	if !sc.Scan() || json.Unmarshal(sc.Bytes(), &head) != nil || head.Version != 1 {
		return head, nil, errors.New("unreadable journal")
	}
	entries := map[string]journalEntry{}
	for sc.Scan() {
		var e journalEntry
		if json.Unmarshal(sc.Bytes(), &e) != nil {
			continue // a line cut short by a crash: that package is redone
		}
		entries[e.Info.Name] = e
	}
	return head, entries, nil
}

func (j *journal) append(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if _, err := j.f.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	return j.f.Sync()
}

func (j *journal) record(plan string, info PackageInfo) error {
	return j.append(journalEntry{Plan: plan, Info: info})
}

// reusable returns the recorded package when the same plan was committed
// before and the files on disk still match the journal: the package's
// length and sha-256, which costs one read of it instead of a rewrite.
func (j *journal) reusable(dir string, p planned) (PackageInfo, bool) {
	e, ok := j.entries[p.name]
	if !ok || e.Plan != p.plan {
		return PackageInfo{}, false
	}
	for _, name := range []string{e.Info.Manifest, e.Info.Metalink} {
		if name == "" {
			continue
		}
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			return PackageInfo{}, false
		}
	}
	n, sum, err := hashFile(filepath.Join(dir, p.name))
	if err != nil || n != e.Info.Length || sum != e.Info.SHA256 {
		return PackageInfo{}, false
	}
	e.Info.Reused = true
	return e.Info, true
}

func hashFile(path string) (int64, string, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, "", err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	return n, hex.EncodeToString(h.Sum(nil)), err
}

// finish removes the journal once the run is complete.
func (j *journal) finish() error {
	j.f.Close()
	if err := os.Remove(j.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

func (j *journal) close() { j.f.Close() }

// removeStaleTemps deletes temporary files a killed run left behind: the
// ones internal/atomic and the list writer name after a file pack writes,
// "." + name + "." + anything + ".tmp".
func removeStaleTemps(dir string) {
	matches, _ := filepath.Glob(filepath.Join(dir, ".*.tmp"))
	for _, m := range matches {
		base := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(m), "."), ".tmp")
		// .rsdump-*: a --changes run's sort runs and walk, and the state
		// file's temporary name.
		if i := strings.LastIndexByte(base, '.'); i > 0 && IsOutput(base[:i]) || strings.HasPrefix(base, "rsdump-") {
			os.Remove(m)
		}
	}
}
