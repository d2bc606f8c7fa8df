package unpack

import (
	"archive/zip"
	"crypto/rand"
	"encoding/hex"
	"io/fs"
	"os"
	"path"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/rsdump/rsdump/verify"
)

// stage is the staging area of one package: a directory of its own,
// DIR/.rsdump/tmp/RANDOM, where the package's bitstreams are written under
// numbers, then made durable all at once (durable), then renamed to their
// final names. Every operation on a staged file names it relative to the
// open directory, so the tree's path is not walked again per file, and
// the files of one package are made durable in one step (syncfs(2) on
// Linux) instead of one fsync each. A killed run leaves the directory for
// the next run to remove.
type stage struct {
	name  string       // relative to the tree
	root  *os.Root     // the directory
	dir   *os.File     // the same directory, for syncfs and renameat
	fd    int          // dir's descriptor
	next  atomic.Int64 // the last number given; files are created from several goroutines
	batch *syncBatch   // where each file is synced on its own (not Linux)
}

// newStage makes a staging directory for one package.
func (d *dest) newStage() (*stage, error) {
	var b [8]byte
	rand.Read(b[:])
	name := path.Join(verify.StateDir, tmpDir, hex.EncodeToString(b[:]))
	if err := d.root.Mkdir(name, 0o700); err != nil {
		return nil, err
	}
	s := &stage{name: name}
	var err error
	if s.root, err = d.root.OpenRoot(name); err == nil {
		s.dir, err = d.root.Open(name)
	}
	if err == nil {
		s.fd = int(s.dir.Fd())
	}
	if err != nil {
		s.close(d)
		return nil, err
	}
	if !syncfsWorks {
		s.batch = d.sync.batch()
	}
	return s, nil
}

// stagedFile is a staging file open for writing.
type stagedFile interface {
	Write(p []byte) (int, error)
	Chmod(mode fs.FileMode) error
	Close() error
	osFile() *os.File // for the syncer, where there is no syncfs
}

// create makes the next staging file.
func (s *stage) create() (stagedFile, string, error) {
	name := strconv.FormatInt(s.next.Add(1), 10)
	f, err := s.createFile(name)
	return f, name, err
}

// seal gives a staged file, fully written, the mtime and permission bits
// its entry records, and hands it over: it is closed now, or, where a
// file system is not synced as a whole, once its own fsync is done.
func (s *stage) seal(f stagedFile, name string, mtime time.Time, entry *zip.File) error {
	var err error
	if perm, ok := recordedPerm(entry); ok {
		err = f.Chmod(perm)
	}
	if err == nil && !mtime.IsZero() {
		err = s.chtimes(name, mtime)
	}
	if err != nil || s.batch == nil {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		return err
	}
	s.batch.add(f.osFile())
	return nil
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
}

func (s *stage) remove(name string) {
	if name != "" {
		s.root.Remove(name)
	}
}

// close removes the staging directory and whatever is still in it.
func (s *stage) close(d *dest) {
	s.wait()
	if s.dir != nil {
		s.dir.Close()
	}
	if s.root != nil {
		s.root.Close()
	}
	d.root.RemoveAll(s.name)
}
