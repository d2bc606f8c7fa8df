package pack

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/rsdump/rsdump/layout"
)

// journalName is the file in the output directory that lets an
// interrupted pack resume: one JSON line per committed package. It is
// removed when the dump document has been written; a shard's (see
// shardJournalName) is kept instead, ended by its completion line, as the
// shard's record for Merge.
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

// journalDone is the line a shard's journal ends with once the shard
// completed: its packages are the first Packages of the shard's names,
// each as the journal's last entry for it records it.
type journalDone struct {
	Completed time.Time `json:"completed"`
	Shard     int       `json:"shard"`
	Shards    int       `json:"shards"`
	Options   string    `json:"options"` // mergeKey: what every shard and the merge share
	Packages  int       `json:"packages"`
}

type journal struct {
	out     *output
	name    string            // journalName, or a shard's own
	owns    func(string) bool // the unfinished files (uploads) that are this run's
	kind    *dumpKind
	head    journalHead
	fresh   bool                    // a new journal, not yet begun
	entries map[string]journalEntry // by package name
	uploads map[string]journalUpload
	done    *journalDone // the completion line read back: a shard that completed
	cut     bool         // the last line read back was cut short by a crash
	kept    bool         // completed: finish keeps the journal
}

// journalUpload is a package whose upload began: a rerun that plans the
// same package resumes it, sending only the parts not stored alike.
type journalUpload struct {
	Upload string `json:"upload"` // the package
	Plan   string `json:"plan"`
	ID     string `json:"id"`
}

// maxJournal bounds the journal read back: a line per package.
const maxJournal = 256 << 20

// loadJournal loads the journal of an earlier run with the same options,
// or plans a new one. at is the snapshot time of this run; an earlier
// run's time wins unless the caller pinned one. It changes nothing: a new
// journal, and what it replaces, waits for begin. A --changes run reads
// its whole baseline in between, so that a bad one fails the run before
// an interrupted run's journal is lost.
//
// A shard's journal that ends with its completion line is not resumed: a
// shard packed again is a new run, as an unsharded pack after a complete
// one is.
func loadJournal(out *output, name string, owns func(string) bool, options string, at time.Time, pinned bool, k *dumpKind) (*journal, error) {
	j, ok, err := openJournal(out, name)
	if err != nil {
		return nil, err
	}
	j.owns, j.kind = owns, k
	if ok && j.done == nil && j.head.Options == options && (!pinned || j.head.At.Equal(at)) {
		return j, nil
	}
	j.entries, j.uploads, j.done = map[string]journalEntry{}, map[string]journalUpload{}, nil
	j.head = journalHead{Version: 1, Options: options, At: at}
	j.fresh = true
	return j, nil
}

// openJournal reads the journal name in out; ok is false when it is
// missing or not a journal.
func openJournal(out *output, name string) (j *journal, ok bool, err error) {
	j = &journal{out: out, name: name, entries: map[string]journalEntry{}, uploads: map[string]journalUpload{}}
	b, err := out.readSmall(name, maxJournal)
	if err != nil {
		return nil, false, err
	}
	j.head, ok = j.read(b)
	j.cut = len(b) > 0 && b[len(b)-1] != '\n'
	return j, ok, nil
}

// begin starts the new journal loadJournal planned, replacing what an
// earlier run left; a resumed journal is kept as it is, its last line
// ended if a crash cut it short, so that the next is not glued to it.
func (j *journal) begin() error {
	if !j.fresh {
		if j.cut {
			j.cut = false
			return j.write([]byte("\n"))
		}
		return nil
	}
	j.fresh = false
	// A fresh run replaces packages one by one: the Resource Dump of an
	// earlier run must not go on listing them meanwhile. A Change Dump
	// run writes packages under new names, and the Change Dump goes on
	// listing the earlier ones.
	if !j.kind.changes() {
		if err := j.out.remove(layout.DumpName); err != nil {
			return err
		}
	}
	// Nothing an earlier run left unfinished will be resumed.
	if err := j.out.discardPending(j.owns); err != nil {
		return err
	}
	if err := j.out.remove(j.name); err != nil {
		return err
	}
	return j.append(j.head)
}

// read loads a journal's lines; ok is false when it is missing or
// unreadable. A completion line counts only as the last line.
func (j *journal) read(b []byte) (head journalHead, ok bool) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	if !sc.Scan() || json.Unmarshal(sc.Bytes(), &head) != nil || head.Version != 1 {
		return head, false
	}
	for sc.Scan() {
		var e journalEntry
		var u journalUpload
		var d journalDone
		j.done = nil
		switch {
		case json.Unmarshal(sc.Bytes(), &u) == nil && u.Upload != "":
			j.uploads[u.Upload] = u
		case json.Unmarshal(sc.Bytes(), &e) == nil && e.Info.Name != "":
			j.entries[e.Info.Name] = e
		case json.Unmarshal(sc.Bytes(), &d) == nil && d.Shards > 0:
			j.done = &d
		}
		// else a line cut short by a crash: that package is redone, or
		// the shard is not complete
	}
	if sc.Err() != nil {
		j.done = nil // lines were left unread
	}
	return head, true
}

func (j *journal) append(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return j.write(append(b, '\n'))
}

func (j *journal) write(b []byte) error {
	// Appended, not rewritten: the cost of a record does not grow with
	// the number of packages before it.
	if err := j.out.Append(j.out.ctx, j.name, b); err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	return nil
}

func (j *journal) record(plan string, info PackageInfo) error {
	return j.append(journalEntry{Plan: plan, Info: info})
}

// recordUpload notes the upload a package is streamed into, before its
// first part is sent.
func (j *journal) recordUpload(name, plan, id string) error {
	if j == nil || id == "" {
		return nil // a local temporary file: nothing to resume
	}
	u := journalUpload{Upload: name, Plan: plan, ID: id}
	j.uploads[name] = u
	return j.append(u)
}

// upload returns the upload an earlier run began for the same plan of a
// package, or "".
func (j *journal) upload(p planned) string {
	if j == nil {
		return ""
	}
	if u, ok := j.uploads[p.name]; ok && u.Plan == p.plan {
		return u.ID
	}
	return ""
}

// reusable returns the recorded package when the same plan was committed
// before and the files still match the journal: the package's length and
// sha-256 (see output.sameFile), which costs one read of it instead of a
// rewrite.
func (j *journal) reusable(p planned) (PackageInfo, bool) {
	e, ok := j.entries[p.name]
	if !ok || e.Plan != p.plan {
		return PackageInfo{}, false
	}
	for _, name := range []string{e.Info.Manifest, e.Info.Metalink} {
		if name == "" {
			continue
		}
		if ok, err := j.out.exists(name); !ok || err != nil {
			return PackageInfo{}, false
		}
	}
	if !j.out.signedLeftovers(e.Info) || !j.out.sameFile(p.name, e.Info.Length, e.Info.SHA256) {
		return PackageInfo{}, false
	}
	e.Info.Reused = true
	return e.Info, true
}

// complete ends a shard's journal with its completion line, once every
// package is published, and aborts any upload still open: none of them
// will be finished. The journal is kept: it is the shard's record for
// Merge.
func (j *journal) complete(d journalDone) error {
	if err := j.out.discardPending(j.owns); err != nil {
		return err
	}
	if err := j.append(d); err != nil {
		return err
	}
	j.kept = true
	return nil
}

// finish removes the journal once the run is complete, and aborts any
// upload still open: none of them will be finished. A merge has no
// journal; a shard's, completed, is kept.
func (j *journal) finish() error {
	if j == nil || j.kept {
		return nil
	}
	if err := j.out.discardPending(j.owns); err != nil {
		return err
	}
	return j.out.remove(j.name)
}

func (j *journal) close() {}

// removeStaleTemps deletes temporary files a killed run left behind: the
// ones internal/atomic and the list writer name after a file pack writes,
// "." + name + "." + anything + ".tmp".
func removeStaleTemps(dir string) {
	matches, _ := filepath.Glob(filepath.Join(dir, ".*.tmp"))
	for _, m := range matches {
		base := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(m), "."), ".tmp")
		// .rsdump-*: a --changes run's sort runs and walk, and the state
		// file's temporary name.
		if i := strings.LastIndexByte(base, '.'); i > 0 && layout.IsOutput(base[:i]) || strings.HasPrefix(base, "rsdump-") {
			os.Remove(m)
		}
	}
}
