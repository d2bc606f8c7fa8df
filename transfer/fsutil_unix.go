//go:build unix

package transfer

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// lockPart takes an advisory lock on the .part file, so that two runs
// never write the same download.
func lockPart(f *os.File) error {
	err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
	if errors.Is(err, unix.EWOULDBLOCK) {
		return fmt.Errorf("%s: another rsdump is downloading this file", f.Name())
	}
	return err
}

// closePart releases the lock on f and closes it: explicitly, since a
// program started at that moment holds a copy of the descriptor between
// its fork and its exec, and flock belongs to the open file (see
// deststate's releaseLock).
func closePart(f *os.File) {
	unix.Flock(int(f.Fd()), unix.LOCK_UN)
	f.Close()
}

// isHole reports whether [off, end) holds no data (never written), so a
// rehash can skip it.
func isHole(f *os.File, off, end int64) bool {
	next, err := unix.Seek(int(f.Fd()), off, unix.SEEK_DATA)
	if errors.Is(err, unix.ENXIO) {
		return true
	}
	return err == nil && next >= end
}

// linkCount is the number of hard links to the file fi describes.
func linkCount(fi fs.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Nlink)
	}
	return 1
}
