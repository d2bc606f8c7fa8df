package unpack

import (
	"archive/zip"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// stage is the staging area of one package: a directory of its own,
// DIR/.rsdump/tmp/RANDOM, where each bitstream is written at its target's
// own path, then made durable with the others all at once (durable),
// then given its place in the tree. Staging at the target's path is what
// makes a fresh restore cheap: a directory the tree does not have yet is
// renamed into it whole, one rename for all its files, and each file is
// created in a directory of its own size rather than in one of a
// package's 50,000 names. The files of one package are made durable in
// one step (syncfs(2) on Linux) instead of one fsync each. A killed run
// leaves the directory for the next run to remove.
type stage struct {
	name  string   // relative to the tree
	root  *os.Root // the directory
	dir   *os.File // the same directory, for syncfs
	mu    sync.Mutex
	dirs  *dirs           // the staging tree's directories, open; under mu
	made  map[string]bool // every directory in it, for the syncer; under mu
	batch *syncBatch      // where each file is synced on its own (not Linux)
	kept  bool            // outlives the run (keptStage)

	staged   atomic.Int64   // files sealed, for flushEvery
	dirty    atomic.Int64   // bytes sealed since the last early writeback, for flushBytes
	flushing sync.WaitGroup // the early syncfs running, if any
	flushOn  atomic.Bool    // an early syncfs is running
}

// flushEvery is how many files are staged between two early writebacks
// (see flush), and flushBytes how many bytes: large files reach the
// disk's pace long before 4,096 of them are staged. Variables for tests.
var (
	flushEvery int64 = 4096
	flushBytes int64 = 64 << 20
)

// newStage makes a staging directory for one package.
func (d *dest) newStage() (*stage, error) {
	var b [8]byte
	rand.Read(b[:])
	name := path.Join(d.st.Tmp(), hex.EncodeToString(b[:]))
	if err := d.root.Mkdir(name, 0o700); err != nil {
		return nil, err
	}
	return d.openStage(name)
}

// keptStage opens, or makes, the staging directory name (relative to the
// tree) that outlives the run: a resumable package's (see resume.go). It
// is not removed when the run ends; its package's cache directory, which
// holds it, goes once the package was applied.
func (d *dest) keptStage(name string) (*stage, error) {
	if err := d.root.MkdirAll(name, 0o700); err != nil {
		return nil, err
	}
	s, err := d.openStage(name)
	if err == nil {
		s.kept = true
	}
	return s, err
}

func (d *dest) openStage(name string) (*stage, error) {
	s := &stage{name: name}
	var err error
	if s.root, err = d.root.OpenRoot(name); err == nil {
		s.dir, err = d.root.Open(name)
	}
	if err != nil {
		s.close(d)
		return nil, err
	}
	s.dirs = newDirs(s.root)
	if !syncfsWorks {
		s.batch, s.made = d.sync.batch(), map[string]bool{}
	}
	return s, nil
}

// stagedFile is a staging file open for writing.
type stagedFile interface {
	Write(p []byte) (int, error)
	Chmod(mode fs.FileMode) error
	SetTimes(t time.Time) error
	Close() error
	osFile() *os.File // for the syncer, where there is no syncfs
}

// create makes the staging file of target, a path relative to the tree,
// at that same path in the stage, with the staging directories it needs.
// Several goroutines may create files at once (a Change List's resources
// are fetched in parallel).
func (s *stage) create(target string) (stagedFile, error) {
	dir, base := path.Split(target)
	s.mu.Lock()
	defer s.mu.Unlock()
	h, err := s.dirs.make(path.Clean(dir))
	if errors.Is(err, fs.ErrExist) || errors.Is(err, syscall.ENOTDIR) {
		return nil, &dirError{fmt.Errorf("%s: a file of another bitstream of the package is on its path (%w)", target, err)}
	}
	if err != nil {
		return nil, &dirError{err}
	}
	if s.batch != nil {
		for d := h.path; d != "." && !s.made[d]; d = path.Dir(d) {
			s.made[d] = true
		}
	}
	f, err := createFile(h, base)
	if errors.Is(err, fs.ErrExist) {
		// Two bitstreams never share a target (plan refuses the second):
		// the name is a directory another one's path made, or, on a file
		// system that ignores case, another's name in other case.
		return nil, &dirError{fmt.Errorf("%s: another bitstream of the package already has this name in the staging directory (%w)", target, err)}
	}
	return f, err
}

// dirError is a staging directory that cannot be made, most often because
// another bitstream of the package is a file on its path, or a file whose
// name another bitstream's path made a directory: the bitstream is
// refused, as it would be in the tree, and the run goes on.
type dirError struct{ err error }

func (e *dirError) Error() string { return e.err.Error() }
func (e *dirError) Unwrap() error { return e.err }

// madeUnder lists the staging directories at or under dir, for the
// syncer: moved into the tree, their new entries are synced each.
func (s *stage) madeUnder(dir string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for d := range s.made {
		if d == dir || strings.HasPrefix(d, dir+"/") {
			out = append(out, d)
		}
	}
	return out
}

// seal gives a staged file, fully written, the mtime and permission bits
// its entry records (else keep's, when not 0), and hands it over: it is
// closed now, or, where a file system is not synced as a whole, once its
// own fsync is done.
func (s *stage) seal(f stagedFile, mtime time.Time, entry *zip.File, keep fs.FileMode) error {
	var err error
	if perm, ok := recordedPerm(entry); ok {
		err = f.Chmod(perm)
	} else if keep != 0 {
		err = f.Chmod(keep)
	}
	if err == nil && !mtime.IsZero() {
		err = f.SetTimes(mtime)
	}
	if err != nil || s.batch == nil {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err == nil && (s.staged.Add(1)%flushEvery == 0 || s.dirty.Add(int64(entrySize(entry))) >= flushBytes) {
			s.dirty.Store(0)
			s.flush()
		}
		return err
	}
	s.batch.add(f.osFile())
	return nil
}

// flush starts writing the files staged so far out in the background,
// unless a flush is still running: durable then has only the last few
// thousand files to wait for, where it would wait for a whole package's
// (close to a second for 50,000 small files), with the package's CPU
// idle. Errors are durable's to find.
func (s *stage) flush() {
	if !s.flushOn.CompareAndSwap(false, true) {
		return
	}
	s.flushing.Add(1)
	go func() {
		defer s.flushing.Done()
		syncfs(s.dir)
		s.flushOn.Store(false)
	}()
}

// durable makes every file sealed so far durable, before any of them is
// renamed: a crash after a rename then finds the whole file under its
// final name.
func (s *stage) durable() error {
	if s.batch != nil {
		return s.batch.wait()
	}
	return syncfs(s.dir)
}

// wait lets the fsyncs still running end, where there are any, before
// the directory is removed.
func (s *stage) wait() {
	if s.batch != nil {
		s.batch.wait()
	}
	s.flushing.Wait()
}

// remove removes a staged file that will not be committed, and the
// staging directories its path made that it leaves empty: a directory the
// tree lacks is moved into it whole (lander.land), and must not carry
// empty directories of bitstreams that failed.
func (s *stage) remove(name string) {
	if name == "" {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.root.Remove(name)
	for d := path.Dir(name); d != "."; d = path.Dir(d) {
		s.dirs.forget(d) // a handle would name the removed directory
		if s.root.Remove(d) != nil {
			return // not empty: another bitstream is staged in it
		}
		delete(s.made, d)
	}
}

// close removes the staging directory and whatever is still in it.
func (s *stage) close(d *dest) {
	s.wait()
	if s.dirs != nil {
		s.dirs.close()
	}
	if s.dir != nil {
		s.dir.Close()
	}
	if s.root != nil {
		s.root.Close()
	}
	if !s.kept {
		d.root.RemoveAll(s.name)
	}
}

// entrySize is the bytes a staged file of entry holds; 0 for a file of
// no entry (a list's resource).
func entrySize(entry *zip.File) uint64 {
	if entry == nil {
		return 0
	}
	return entry.UncompressedSize64
}
