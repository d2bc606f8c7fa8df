package deststate

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/rsdump/rsdump/internal/appendlog"
	"github.com/rsdump/rsdump/internal/atomic"
	"github.com/rsdump/rsdump/internal/extsort"
)

// Record is one line of the written log: a file rsdump put in the tree
// (or adopted as its own), or with Length -1 a file it deleted. The last
// record of a path is the truth about it.
type Record struct {
	Path   string `json:"path"`
	Length int64  `json:"length"`
	Hash   string `json:"hash,omitempty"`
	// Mtime is the modification time rsdump gave the file (its
	// <lastmod>); zero when it gave none, or for a record of an older
	// rsdump.
	Mtime time.Time `json:"mtime,omitzero"`
}

// Deleted says whether the record is that of a deletion.
func (r Record) Deleted() bool { return r.Length < 0 }

// Append adds records to the written log and syncs it. A crash between a
// rename and its record loses the record, which makes a later deletion of
// that file refuse and report rather than remove: the safe side. A last
// line a crash cut short is ended first (appendlog), so that it loses
// only itself, not the records appended after it. In a dry run nothing
// is written.
func (d *Dir) Append(recs []Record) error {
	if len(recs) == 0 || d.dry {
		return nil
	}
	name := Path(logName)
	if d.worker != "" {
		if err := d.root.MkdirAll(Path(LogsDir), 0o755); err != nil {
			return fmt.Errorf("%s: written log: %w", d.dir, err)
		}
		name = workerLog(d.worker)
	}
	f, err := appendlog.Open(d.root, name, 0, 0o644)
	if err != nil {
		return fmt.Errorf("%s: written log: %w", d.dir, err)
	}
	w := bufio.NewWriter(f)
	enc := json.NewEncoder(w)
	for _, r := range recs {
		if err = enc.Encode(r); err != nil {
			break
		}
	}
	if err = closeSynced(w, f, err); err != nil {
		return fmt.Errorf("%s: written log: %w", d.dir, err)
	}
	d.mu.Lock()
	d.fresh = false
	d.mu.Unlock()
	return nil
}

// logPath returns the path a written-log line records, as Append writes
// it, without decoding the rest: the log holds a line for every file ever
// written, and a lookup wants a few of them. ok is false when the path is
// escaped, or the line is not of that shape: decode it whole.
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

// workerLog is a sharded restore's worker's written log.
func workerLog(worker string) string { return Path(path.Join(LogsDir, worker+".log")) }

// logs are the written logs: the tree's, then those of a sharded
// restore's workers that no merge has moved into it yet, which every run
// reads too: they record files rsdump wrote. The workers wrote disjoint
// packages, so their order does not matter.
func (d *Dir) logs() ([]string, error) {
	names := []string{Path(logName)}
	if d.root == nil {
		return names, nil
	}
	f, err := d.root.Open(Path(LogsDir))
	if errors.Is(err, fs.ErrNotExist) {
		return names, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	es, err := f.Readdirnames(-1)
	slices.Sort(es)
	for _, e := range es {
		if strings.HasSuffix(e, ".log") {
			names = append(names, Path(path.Join(LogsDir, e)))
		}
	}
	return names, err
}

// openLog opens a written log; nil when there is none.
func (d *Dir) openLog(name string) (*os.File, error) {
	if d.root == nil {
		return nil, nil
	}
	f, err := d.root.Open(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return f, err
}

// scanLog hands fn each record of the logs, in order. A line that does
// not decode is the torn end of a crashed append, or damage: the records
// around it still count. keep, when not nil, says from a line's path alone
// whether the line is wanted, so that most are never decoded.
func (d *Dir) scanLog(keep func(path []byte) bool, fn func(Record) error) error {
	names, err := d.logs()
	if err != nil {
		return err
	}
	for _, name := range names {
		if err := d.scanOne(name, keep, fn); err != nil {
			return err
		}
	}
	return nil
}

func (d *Dir) scanOne(name string, keep func(path []byte) bool, fn func(Record) error) error {
	f, err := d.openLog(name)
	if f == nil || err != nil {
		return err
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 256<<10)
	for {
		line, err := r.ReadBytes('\n')
		var rec Record
		if p, ok := logPath(line); (!ok || keep == nil || keep(p)) && json.Unmarshal(line, &rec) == nil && rec.Path != "" {
			if ferr := fn(rec); ferr != nil {
				return ferr
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: written log: %w", d.dir, err)
		}
	}
}

// Lookup returns the last record of each wanted path. The log is read
// once, front to back, holding only the wanted paths: a package's
// targets, at most 50,000.
func (d *Dir) Lookup(want map[string]bool) (map[string]Record, error) {
	out := map[string]Record{}
	if len(want) == 0 {
		return out, nil
	}
	err := d.scanLog(func(p []byte) bool { return want[string(p)] }, func(r Record) error {
		if want[r.Path] {
			out[r.Path] = r
		}
		return nil
	})
	return out, err
}

// LogStats says what Owned read of the log.
type LogStats struct {
	Lines int64 // records in the log
	Owned int64 // paths whose last record is a file
}

// Owned hands fn the last record of every path whose last record is a
// file, not a deletion: the files rsdump owns in the tree, in path order.
// The log is sorted externally (internal/extsort) in scratch (the
// system's temporary directory when ""), so memory stays bounded however
// many files the tree holds.
func (d *Dir) Owned(ctx context.Context, scratch string, fn func(Record) error) (LogStats, error) {
	var st LogStats
	if scratch == "" {
		scratch = os.TempDir()
	}
	s := extsort.New(scratch, ".rsdump-owned-*.tmp", ownedRun, byPath, recordCodec)
	defer s.Close()
	err := d.scanLog(nil, func(r Record) error {
		st.Lines++
		return s.Add(r)
	})
	if err != nil {
		return st, err
	}
	src, err := s.Sorted()
	if err != nil {
		return st, err
	}
	var last Record
	have := false
	flush := func() error {
		if !have || last.Deleted() {
			return nil
		}
		st.Owned++
		return fn(last)
	}
	for {
		if err := ctx.Err(); err != nil {
			return st, err
		}
		r, ok, err := src.Next()
		if err != nil {
			return st, err
		}
		if !ok {
			return st, flush()
		}
		if have && r.Path != last.Path {
			if err := flush(); err != nil {
				return st, err
			}
		}
		last, have = r, true
	}
}

// MergeLogs moves the records of a sharded restore's workers' logs into
// the tree's written log, once the workers are done (the caller holds the
// tree's lock, not shared): each is appended whole and synced, then
// removed. A crash in between appends a log twice when run again, which
// changes nothing: the last record of a path is the same.
func (d *Dir) MergeLogs() (records int64, err error) {
	if d.dry || d.worker != "" {
		return 0, errors.New("deststate: MergeLogs needs the tree's own lock")
	}
	names, err := d.logs()
	if err != nil {
		return 0, err
	}
	for _, name := range names[1:] {
		n, err := d.appendLog(name)
		if err != nil {
			return records, fmt.Errorf("%s: %w", filepath.Join(d.dir, name), err)
		}
		records += n
		if err := d.root.Remove(name); err != nil {
			return records, err
		}
	}
	if len(names) > 1 {
		if err := d.root.Remove(Path(LogsDir)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return records, err
		}
		err = atomic.SyncDirIn(d.root, DirName)
	}
	return records, err
}

// appendLog copies the log name to the end of the tree's, a line at a
// time (a line cut short by a crashed append is left out), and syncs it.
func (d *Dir) appendLog(name string) (int64, error) {
	src, err := d.root.Open(name)
	if err != nil {
		return 0, err
	}
	defer src.Close()
	dst, err := d.root.OpenFile(Path(logName), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return 0, err
	}
	w := bufio.NewWriterSize(dst, 256<<10)
	r := bufio.NewReaderSize(src, 256<<10)
	var n int64
	for {
		line, rerr := r.ReadBytes('\n')
		if len(line) > 0 && line[len(line)-1] == '\n' {
			if _, err = w.Write(line); err != nil {
				break
			}
			n++
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			err = rerr
			break
		}
	}
	return n, closeSynced(w, dst, err)
}

// closeSynced ends a file appended to through w after err, the first
// failure of the writes: flushed and synced unless they failed, closed in
// any case; the first failure is returned.
func closeSynced(w *bufio.Writer, f *os.File, err error) error {
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

// Compact rewrites the log with only the last record of each file the
// tree holds, when superseded records and deletions make up most of it:
// the log then grows with the tree, not with every change ever applied.
// It is replaced at once (internal/atomic), so a crash leaves the old log
// or the new one.
func (d *Dir) Compact(ctx context.Context, scratch string) error {
	if d.dry || d.root == nil || d.worker != "" {
		return nil
	}
	af, err := atomic.CreateVia(d.root, Path(logName+".compact"), Path(logName), 0o644)
	if err != nil {
		return err
	}
	defer af.Abort()
	w := bufio.NewWriterSize(af, 256<<10)
	enc := json.NewEncoder(w)
	if _, err := d.Owned(ctx, scratch, func(r Record) error { return enc.Encode(r) }); err != nil {
		return err
	}
	if err := w.Flush(); err != nil {
		return err
	}
	return af.Commit()
}

// Worth says whether compacting a log read with these stats would shrink
// it by more than half, and by more than a few thousand lines.
func (s LogStats) Worth() bool { return s.Lines > 2*s.Owned+4096 }

var ownedRun = 1 << 16 // records sorted in memory at once; a variable for tests

func byPath(a, b *Record) int { return strings.Compare(a.Path, b.Path) }

var recordCodec = extsort.Codec[Record]{
	Append: func(b []byte, r *Record) []byte {
		j, _ := json.Marshal(r)
		return append(append(b, j...), '\n')
	},
	Read: func(br *bufio.Reader) (Record, error) {
		line, err := br.ReadBytes('\n')
		if err == io.EOF && len(line) == 0 {
			return Record{}, io.EOF
		}
		if err != nil && err != io.EOF {
			return Record{}, err
		}
		var r Record
		if err := json.Unmarshal(line, &r); err != nil {
			return Record{}, fmt.Errorf("sorted written log: %w", err)
		}
		return r, nil
	},
}

// scratchIn is the directory for the run's scratch files inside the tree's
// state directory.
func (d *Dir) scratchIn() string { return filepath.Join(d.dir, filepath.FromSlash(d.Tmp())) }

// Scratch is where a run keeps scratch files: the state directory's tmp,
// emptied by every Open, or in a dry run the system's temporary
// directory.
func (d *Dir) Scratch() string {
	if d.dry {
		return os.TempDir()
	}
	return d.scratchIn()
}
