package unpack

import (
	"archive/zip"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"sync"
	"time"

	"github.com/rsdump/rsdump/internal/atomic"
	"github.com/rsdump/rsdump/internal/digest"
	"github.com/rsdump/rsdump/verify"
)

// dest is the destination tree. Every file operation goes through an
// os.Root, so that no name, and no symbolic link already in the tree, can
// make unpack touch anything outside it.
type dest struct {
	dir  string
	root *os.Root // nil in a dry run against a directory that does not exist
	lock *os.File
	sync *syncer
}

// openDest opens (and creates) the tree, takes its lock, and clears the
// staging directory of an interrupted run. A dry run creates nothing and
// takes no lock.
func openDest(dir string, dry, keepCache bool) (*dest, error) {
	d := &dest{dir: dir}
	if dry {
		root, err := os.OpenRoot(dir)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		d.root = root
		return d, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	d.root = root
	if err := d.prepare(keepCache); err != nil {
		d.close()
		return nil, err
	}
	d.sync = newSyncer()
	return d, nil
}

func (d *dest) prepare(keepCache bool) error {
	if err := d.root.MkdirAll(verify.StateDir, 0o755); err != nil {
		return fmt.Errorf("%s: %w", d.dir, err)
	}
	lock, err := lockFile(d.root, statePath(lockName))
	if err != nil {
		return fmt.Errorf("%s: %w", d.dir, err)
	}
	d.lock = lock
	// What a killed run left: staged bitstreams never renamed, packages
	// half downloaded. Staged files are never resumed from, so they go;
	// downloads stay when the run resumes them.
	dirs := []string{tmpDir, cacheDir}
	if keepCache {
		dirs = dirs[:1]
	}
	for _, dir := range dirs {
		if err := d.root.RemoveAll(statePath(dir)); err != nil {
			return err
		}
	}
	for _, dir := range []string{tmpDir, cacheDir} {
		if err := d.root.MkdirAll(statePath(dir), 0o755); err != nil {
			return err
		}
	}
	return nil
}

func (d *dest) close() {
	if d.sync != nil {
		d.sync.stop()
	}
	if d.lock != nil {
		d.lock.Close() // releases the flock
	}
	if d.root != nil {
		d.root.Close()
	}
}

// createTemp makes a new staging file in .rsdump/tmp. Staging there rather
// than beside the target lets the next run find and remove what a killed
// run left, and rename is atomic within the tree's filesystem.
func (d *dest) createTemp() (*os.File, string, error) {
	var b [8]byte
	rand.Read(b[:])
	name := path.Join(verify.StateDir, tmpDir, hex.EncodeToString(b[:])+".part")
	f, err := d.root.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	return f, name, err
}

func (d *dest) discard(tmp string) {
	if tmp != "" {
		d.root.Remove(tmp)
	}
}

// checkTarget refuses a target that is a symbolic link or a directory, or
// whose parent cannot be reached inside the tree. It returns the target's
// info, or nil when it does not exist.
func (d *dest) checkTarget(rel string) (fs.FileInfo, error) {
	if d.root == nil {
		return nil, nil // a dry run into a directory that does not exist yet
	}
	fi, err := d.root.Lstat(rel)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil
	case err != nil:
		return nil, err
	case fi.Mode()&fs.ModeSymlink != 0:
		return nil, fmt.Errorf("%s is a symbolic link; not replaced", rel)
	case !fi.Mode().IsRegular():
		return nil, fmt.Errorf("%s exists and is not a regular file (%s)", rel, fi.Mode().Type())
	}
	return fi, nil
}

// commit gives a staged file its final name, with its modification time
// and the permission bits its entry records, creating the parent
// directories inside the tree.
func (d *dest) commit(tmp, rel string, mtime time.Time, entry *zip.File) error {
	if _, err := d.checkTarget(rel); err != nil {
		return err
	}
	if err := d.setPerm(tmp, entry); err != nil {
		return err
	}
	if dir := path.Dir(rel); dir != "." {
		if err := d.root.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	if !mtime.IsZero() {
		if err := d.root.Chtimes(tmp, mtime, mtime); err != nil {
			return err
		}
	}
	return d.root.Rename(tmp, rel)
}

// matches reports whether rel holds length bytes with every computable
// hash of want, and returns the sums it computed. A target with no
// computable hash never matches: it cannot be shown to be the bitstream.
func (d *dest) matches(rel string, length int64, want digest.Set) (bool, digest.Set, error) {
	fi, err := d.checkTarget(rel)
	if fi == nil || err != nil || len(want.Known()) == 0 || length >= 0 && fi.Size() != length {
		return false, nil, err
	}
	sums, err := d.hash(rel, want.Known())
	if err != nil {
		return false, nil, err
	}
	_, bad, _ := digest.Check(want, sums)
	return len(bad) == 0, sums, nil
}

func (d *dest) hash(rel string, algs []string) (digest.Set, error) {
	f, err := d.root.Open(rel)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	mh, err := digest.NewMulti(algs...)
	if err != nil {
		return nil, err
	}
	buf := hashBufs.Get().(*[]byte)
	defer hashBufs.Put(buf)
	if _, err := io.CopyBuffer(mh, f, *buf); err != nil {
		return nil, fmt.Errorf("%s: %w", rel, err)
	}
	return mh.Sums(), nil
}

// hashBufs holds hash's buffers: a Change Dump hashes every file it
// updates or deletes, most of them small, and a new 256 KiB buffer for
// each cost more than the hashing.
var hashBufs = sync.Pool{New: func() any { b := make([]byte, 256<<10); return &b }}

// syncDir makes the renames in dir durable.
func (d *dest) syncDir(dir string) error { return atomic.SyncDirIn(d.root, dir) }
