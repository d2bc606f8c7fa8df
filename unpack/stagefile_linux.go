package unpack

import (
	"errors"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// createFile creates a staging file in the directory h through its
// descriptor alone. An *os.File would cost five more system calls per
// file (fcntl to set and check non-blocking mode, epoll_ctl to register
// it with the poller, which refuses a regular file) that a write of a few
// bytes, a chmod and a close have no use for; a package of small files
// creates 50,000. The name is one component, checked by pkgread.SafeName,
// in a staging directory: nothing to resolve.
func createFile(h *dirHandle, base string) (stagedFile, error) {
	fd, err := unix.Openat(h.fd, base, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: base, Err: err}
	}
	return rawFile(fd), nil
}

// rawFile is a file descriptor open for writing.
type rawFile int

func (f rawFile) Write(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		m, err := unix.Write(int(f), p[n:])
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return n, &fs.PathError{Op: "write", Path: "staged file", Err: err}
		}
		n += m
	}
	return n, nil
}

// Chmod skips the chmod when the file already has the mode: created as
// 0644 less the umask, which is what most entries record.
func (f rawFile) Chmod(mode fs.FileMode) error {
	if m, ok := createdMode(); ok && mode.Perm() == m {
		return nil
	}
	if err := unix.Fchmod(int(f), uint32(mode.Perm())); err != nil {
		return &fs.PathError{Op: "chmod", Path: "staged file", Err: err}
	}
	return nil
}

// createdMode is the mode createFile's files get: 0644 less the process's
// umask, read from /proc/self/status (Linux 4.7) rather than set and
// restored with umask(2), which would race with files being created.
var createdMode = sync.OnceValues(func() (fs.FileMode, bool) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, false
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "Umask:"); ok {
			mask, err := strconv.ParseUint(strings.TrimSpace(v), 8, 32)
			if err != nil {
				return 0, false
			}
			return fs.FileMode(0o644 &^ mask), true
		}
	}
	return 0, false
})

// SetTimes is futimens(3): utimensat(2) on the descriptor with no path,
// which x/sys/unix has no wrapper for (its empty path needs AT_EMPTY_PATH,
// Linux 5.8).
func (f rawFile) SetTimes(t time.Time) error {
	ts := [2]unix.Timespec{unix.NsecToTimespec(t.UnixNano()), unix.NsecToTimespec(t.UnixNano())}
	_, _, e := unix.Syscall6(unix.SYS_UTIMENSAT, uintptr(f), 0, uintptr(unsafe.Pointer(&ts)), 0, 0, 0)
	if e != 0 {
		return &fs.PathError{Op: "chtimes", Path: "staged file", Err: e}
	}
	return nil
}

func (f rawFile) Close() error { return unix.Close(int(f)) }

// osFile hands the descriptor over to the syncer, which syncs and closes
// it. Here syncfs makes the files durable; tests run the syncer's path
// of systems without syncfs (SetFsyncEach).
func (f rawFile) osFile() *os.File { return os.NewFile(uintptr(f), "staged file") }
