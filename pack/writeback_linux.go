package pack

import (
	"os"

	"golang.org/x/sys/unix"
)

// startWriteback asks the kernel to begin writing a range of f to disk
// now, without waiting. Packages are written at disk speed, so flushing
// as we go keeps dirty pages few and makes the fsync at the end short.
func startWriteback(f *os.File, off, n int64) {
	unix.SyncFileRange(int(f.Fd()), off, n, unix.SYNC_FILE_RANGE_WRITE)
}
