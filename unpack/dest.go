package unpack

import (
	"io/fs"
	"os"
	"sync"

	"github.com/rsdump/rsdump/deststate"
	"github.com/rsdump/rsdump/internal/atomic"
	"github.com/rsdump/rsdump/internal/digest"
)

// dest is the destination tree. Every file operation goes through an
// os.Root, so that no name, and no symbolic link already in the tree, can
// make unpack touch anything outside it. Its state, written log and lock
// are deststate's.
type dest struct {
	dir  string
	root *os.Root // nil in a dry run against a directory that does not exist
	st   *deststate.Dir
	own  bool // st was opened by this run, which closes it
	sync *syncer
}

// openDest opens (and creates) the tree, takes its lock, and clears the
// staging directory of an interrupted run (deststate.Open), unless the
// caller holds it open already (Options.Dir). A dry run creates nothing
// and takes no lock.
func openDest(dir string, opts Options) (*dest, error) {
	st, own := opts.Dir, false
	if st != nil {
		if err := checkDir(st, dir); err != nil {
			return nil, err
		}
	} else {
		var err error
		o := deststate.Options{Command: command(opts), DryRun: opts.DryRun, KeepCache: opts.ResumeDownloads}
		if opts.Shard != nil {
			o.Worker = workerName(opts.Shard)
		}
		st, err = deststate.Open(dir, o)
		if err != nil {
			return nil, err
		}
		own = true
	}
	d := &dest{dir: st.Path(), root: st.Root(), st: st, own: own}
	if !st.DryRun() {
		d.sync = newSyncer()
	}
	return d, nil
}

func (d *dest) close() { d.closeAfter(nil) }

// closeAfter is close at the end of a run that ended with err: a run that
// failed having written nothing in the tree (a refused first run) takes
// away what opening it made (deststate.Dir.CloseUnused), so that the
// Destination is left as it was found.
func (d *dest) closeAfter(err error) {
	if d.sync != nil {
		d.sync.stop()
	}
	switch {
	case !d.own:
	case err != nil:
		d.st.CloseUnused()
	default:
		d.st.Close()
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
	return hashFile(d.root, rel, algs, nil)
}

// hashBufs holds hash's buffers: a Change Dump hashes every file it
// updates or deletes, most of them small, and a new 256 KiB buffer for
// each cost more than the hashing.
var hashBufs = sync.Pool{New: func() any { b := make([]byte, 256<<10); return &b }}

// syncDir makes the renames in dir durable.
func (d *dest) syncDir(dir string) error { return atomic.SyncDirIn(d.root, dir) }
