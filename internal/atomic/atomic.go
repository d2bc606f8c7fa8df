// Package atomic publishes files so that a crash leaves either the old
// content or the new, never a mix: the data is written under a temporary
// name in the same directory, synced, renamed over the final name, and the
// directory is synced so that the rename itself survives a crash. Every
// error is checked, and on any failure the temporary file is removed and
// the final name is left as it was.
//
// The same code works on plain paths (OS) and inside an *os.Root, which
// satisfies FS, so a destination tree confined to a root uses it too.
package atomic

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"syscall"
)

// FS is what a writer needs of a directory tree. *os.Root satisfies it;
// OS is the file system at large, taking ordinary paths.
type FS interface {
	OpenFile(name string, flag int, perm fs.FileMode) (*os.File, error)
	Open(name string) (*os.File, error)
	Rename(oldname, newname string) error
	Remove(name string) error
}

type osFS struct{}

func (osFS) OpenFile(name string, flag int, perm fs.FileMode) (*os.File, error) {
	return os.OpenFile(name, flag, perm)
}
func (osFS) Open(name string) (*os.File, error)   { return os.Open(name) }
func (osFS) Rename(oldname, newname string) error { return os.Rename(oldname, newname) }
func (osFS) Remove(name string) error             { return os.Remove(name) }

// OS is the operating system's file system, with ordinary paths.
var OS FS = osFS{}

// File is a file being written under a temporary name. Commit gives it
// its final name; Abort, or any failure in Commit, removes it.
type File struct {
	fsys  FS
	f     *os.File
	tmp   string
	name  string
	perm  fs.FileMode
	ended bool
}

// Create starts writing path (an ordinary path) with permission bits perm.
func Create(path string, perm fs.FileMode) (*File, error) { return CreateIn(OS, path, perm) }

// CreateIn starts writing name inside fsys. The temporary file is
// ".BASE.RANDOM.tmp" beside name, so a directory listing shows what it is
// and a glob ".BASE*.tmp" finds what a killed process left.
func CreateIn(fsys FS, name string, perm fs.FileMode) (*File, error) {
	for range 10 {
		tmp := tempName(fsys, name)
		f, err := fsys.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("writing %s: %w", name, err)
		}
		return &File{fsys: fsys, f: f, tmp: tmp, name: name, perm: perm}, nil
	}
	return nil, fmt.Errorf("writing %s: no free temporary name", name)
}

// CreateVia starts writing name inside fsys through the fixed temporary
// name tmp, in the same directory, replacing whatever a killed process
// left there. It is for a caller that holds a lock on name, so that no
// one else uses tmp and a crash leaves nothing the next run does not
// overwrite. What is at tmp is removed, not written through: a symbolic
// link there is never followed.
func CreateVia(fsys FS, tmp, name string, perm fs.FileMode) (*File, error) {
	if err := fsys.Remove(tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("writing %s: %w", name, err)
	}
	f, err := fsys.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("writing %s: %w", name, err)
	}
	return &File{fsys: fsys, f: f, tmp: tmp, name: name, perm: perm}, nil
}

// WriteFileVia writes data to name inside fsys atomically through the
// fixed temporary name tmp (see CreateVia).
func WriteFileVia(fsys FS, tmp, name string, data []byte, perm fs.FileMode) error {
	f, err := CreateVia(fsys, tmp, name, perm)
	if err != nil {
		return err
	}
	return write(f, data)
}

func tempName(fsys FS, name string) string {
	var r [6]byte
	rand.Read(r[:])
	dir, base := splitPath(fsys, name)
	return joinPath(fsys, dir, "."+base+"."+hex.EncodeToString(r[:])+".tmp")
}

// Paths inside a root are slash-separated; ordinary ones are the system's.
func splitPath(fsys FS, name string) (string, string) {
	if fsys == OS {
		return filepath.Dir(name), filepath.Base(name)
	}
	return path.Dir(name), path.Base(name)
}

func joinPath(fsys FS, dir, base string) string {
	if fsys == OS {
		return filepath.Join(dir, base)
	}
	return path.Join(dir, base)
}

// Write writes to the temporary file.
func (f *File) Write(p []byte) (int, error) { return f.f.Write(p) }

// File is the temporary file itself, for WriteAt, ReadFrom or a file
// descriptor; the caller must not close it.
func (f *File) File() *os.File { return f.f }

// TempName is the temporary file's name.
func (f *File) TempName() string { return f.tmp }

// Commit sets the permission bits, syncs and closes the file, renames it
// to its final name and syncs the directory. On failure the temporary
// file is removed and the final name is untouched, unless only the
// directory sync failed, after the rename.
func (f *File) Commit() error {
	if f.ended {
		return fmt.Errorf("writing %s: already committed or aborted", f.name)
	}
	f.ended = true
	err := f.f.Chmod(f.perm)
	if err == nil {
		err = f.f.Sync()
	}
	if cerr := f.f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = f.fsys.Rename(f.tmp, f.name)
	}
	if err != nil {
		f.fsys.Remove(f.tmp)
		return fmt.Errorf("writing %s: %w", f.name, err)
	}
	dir, _ := splitPath(f.fsys, f.name)
	if err := SyncDirIn(f.fsys, dir); err != nil {
		return fmt.Errorf("writing %s: %w", f.name, err)
	}
	return nil
}

// Abort closes and removes the temporary file; the final name is never
// touched. It does nothing after Commit or a first Abort, so it can be
// deferred.
func (f *File) Abort() {
	if f.ended {
		return
	}
	f.ended = true
	f.f.Close()
	f.fsys.Remove(f.tmp)
}

// WriteFile writes data to path atomically (see the package comment).
func WriteFile(path string, data []byte, perm fs.FileMode) error {
	return WriteFileIn(OS, path, data, perm)
}

// WriteFileIn writes data to name inside fsys atomically.
func WriteFileIn(fsys FS, name string, data []byte, perm fs.FileMode) error {
	f, err := CreateIn(fsys, name, perm)
	if err != nil {
		return err
	}
	return write(f, data)
}

func write(f *File, data []byte) error {
	if _, err := f.Write(data); err != nil {
		f.Abort()
		return fmt.Errorf("writing %s: %w", f.name, err)
	}
	return f.Commit()
}

// CommitNew is Commit that gives the file its final name only when no
// file has it: a hard link from the temporary name, which fails on a name
// taken (then wrapping fs.ErrExist) and is atomic on local file systems
// and NFS alike, the lock-file idiom; so that of two writers racing for a
// name exactly one wins, and a reader never sees the name half written.
// fsys must make links (OS and *os.Root do).
func (f *File) CommitNew() error {
	if f.ended {
		return fmt.Errorf("writing %s: already committed or aborted", f.name)
	}
	f.ended = true
	ln, ok := f.fsys.(interface {
		Link(oldname, newname string) error
	})
	if f.fsys == OS {
		ln, ok = linkOS{}, true
	}
	err := f.f.Chmod(f.perm)
	if err == nil {
		err = f.f.Sync()
	}
	if cerr := f.f.Close(); err == nil {
		err = cerr
	}
	if err == nil && !ok {
		err = errors.ErrUnsupported
	}
	if err == nil {
		err = ln.Link(f.tmp, f.name)
	}
	f.fsys.Remove(f.tmp)
	if err != nil {
		return fmt.Errorf("writing %s: %w", f.name, err)
	}
	dir, _ := splitPath(f.fsys, f.name)
	if err := SyncDirIn(f.fsys, dir); err != nil {
		return fmt.Errorf("writing %s: %w", f.name, err)
	}
	return nil
}

type linkOS struct{}

func (linkOS) Link(oldname, newname string) error { return os.Link(oldname, newname) }

// WriteNew writes data to path atomically, only when no file is at path
// (see CommitNew): an error wrapping fs.ErrExist when one is.
func WriteNew(path string, data []byte, perm fs.FileMode) error {
	f, err := Create(path, perm)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Abort()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return f.CommitNew()
}

// Publish gives f, already written under the name from in the directory
// of to, its final name to: it syncs and closes f, renames it and syncs
// the directory. Unlike Commit it leaves from in place on failure, for a
// file that is kept to resume (a download's .part).
func Publish(f *os.File, from, to string) error { return PublishIn(OS, f, from, to) }

// PublishIn is Publish for names inside fsys.
func PublishIn(fsys FS, f *os.File, from, to string) error {
	err := f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = fsys.Rename(from, to)
	}
	if err == nil {
		dir, _ := splitPath(fsys, to)
		err = SyncDirIn(fsys, dir)
	}
	if err != nil {
		return fmt.Errorf("publishing %s: %w", to, err)
	}
	return nil
}

// MoveIn is PublishIn without its syncs: it closes f and renames it, for
// a scratch file (a download checked again before every use) that need
// not survive a crash, only never be seen under to before it is whole.
func MoveIn(fsys FS, f *os.File, from, to string) error {
	err := f.Close()
	if err == nil {
		err = fsys.Rename(from, to)
	}
	if err != nil {
		return fmt.Errorf("publishing %s: %w", to, err)
	}
	return nil
}

// SyncDir makes the renames in dir durable.
func SyncDir(dir string) error { return SyncDirIn(OS, dir) }

// SyncDirIn makes the renames in dir, inside fsys, durable. A file system
// that cannot sync a directory is not an error, nor is Windows, where a
// directory cannot be opened for syncing and renames are journaled.
func SyncDirIn(fsys FS, dir string) error {
	if runtime.GOOS == "windows" {
		return nil
	}
	d, err := fsys.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if errors.Is(err, os.ErrInvalid) || errors.Is(err, syscall.EINVAL) || errors.Is(err, errors.ErrUnsupported) {
		return nil
	}
	return err
}
