package unpack

import (
	"errors"
	"io/fs"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// createFile creates a staging file through its descriptor alone. An
// *os.File would cost five more system calls per file (fcntl to set and
// check non-blocking mode, epoll_ctl to register it with the poller, which
// refuses a regular file) that a write of a few bytes, a chmod and a close
// have no use for; a package of small files creates 50,000. The name is
// one the stage gave, in a directory of its own: nothing to resolve.
func (s *stage) createFile(name string) (stagedFile, error) {
	fd, err := unix.Openat(s.fd, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	return rawFile(fd), nil
}

// chtimes sets a staged file's times, relative to the stage's directory.
func (s *stage) chtimes(name string, t time.Time) error {
	ts := unix.NsecToTimespec(t.UnixNano())
	err := unix.UtimesNanoAt(s.fd, name, []unix.Timespec{ts, ts}, unix.AT_SYMLINK_NOFOLLOW)
	if err != nil {
		return &fs.PathError{Op: "chtimes", Path: name, Err: err}
	}
	return nil
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

func (f rawFile) Chmod(mode fs.FileMode) error {
	if err := unix.Fchmod(int(f), uint32(mode.Perm())); err != nil {
		return &fs.PathError{Op: "chmod", Path: "staged file", Err: err}
	}
	return nil
}

func (f rawFile) Close() error { return unix.Close(int(f)) }

// osFile is never needed here: syncfs makes the files durable.
func (f rawFile) osFile() *os.File { return nil }
