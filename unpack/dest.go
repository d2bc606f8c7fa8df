package unpack

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sync"

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

// checkTarget refuses a target that is a symbolic link or a directory, or
// whose parent cannot be reached inside the tree. It returns the target's
// info, or nil when it does not exist.
func (d *dest) checkTarget(rel string) (fs.FileInfo, error) {
	if d.root == nil {
		return nil, nil // a dry run into a directory that does not exist yet
	}
	fi, err := d.root.Lstat(rel)
	return targetInfo(rel, statResult{fi, err})
}

// matches reports whether rel, whose info is fi (nil when absent), holds length bytes with every computable
// hash of want, and returns the sums it computed. A target with no
// computable hash never matches: it cannot be shown to be the bitstream.
func (d *dest) matches(rel string, fi fs.FileInfo, length int64, want digest.Set) (bool, digest.Set, error) {
	if fi == nil || len(want.Known()) == 0 || length >= 0 && fi.Size() != length {
		return false, nil, nil
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
