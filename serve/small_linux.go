//go:build linux

package serve

import (
	"os"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// readSmall reads whole into buf the resource name leads to when it is
// small and its way plain: every name before the last a directory, the
// last a regular file of at most len(buf) bytes, none a symbolic link and
// no directory hide. That is most requests of a list's resources, and it
// takes an openat and an fstat per directory (the fstat only to compare
// with hide, none without it), an fstatat, an openat, an fstat and a
// pread for the file, where open's walk takes an lstat more per
// directory and its os.Root and os.File for each. ok is false
// whenever the name is anything else or anything fails, with nothing left
// open: open's walk judges the name then. dir is the resources' root,
// open.
func readSmall(dir *os.File, name string, hide os.FileInfo, buf []byte) (b []byte, size int64, mtime time.Time, ok bool) {
	rc, err := dir.SyscallConn()
	if err != nil {
		return nil, 0, time.Time{}, false
	}
	var h *syscall.Stat_t
	if hide != nil {
		if h, ok = hide.Sys().(*syscall.Stat_t); !ok {
			return nil, 0, time.Time{}, false
		}
	}
	ok = false
	// Control holds the root's descriptor open while it runs.
	rc.Control(func(root uintptr) { b, size, mtime, ok = readSmallAt(int(root), name, h, buf) })
	return b, size, mtime, ok
}

func readSmallAt(root int, name string, hide *syscall.Stat_t, buf []byte) (b []byte, size int64, mtime time.Time, ok bool) {
	dir := root
	defer func() {
		if dir != root {
			unix.Close(dir)
		}
	}()
	for {
		c, rest, more := strings.Cut(name, "/")
		if !more {
			break
		}
		// O_NOFOLLOW|O_DIRECTORY: a link or anything but a directory is
		// refused by the open itself, with no window for a swap.
		fd, err := unix.Openat(dir, c, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return
		}
		if dir != root {
			unix.Close(dir)
		}
		dir, name = fd, rest
		if hide == nil {
			continue
		}
		var st unix.Stat_t
		if unix.Fstat(fd, &st) != nil || sameFile(&st, hide) {
			return
		}
	}
	// Only a regular file is opened (the open of a device may do
	// something); the one opened must be the one checked.
	var st, got unix.Stat_t
	if unix.Fstatat(dir, name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG || st.Size > int64(len(buf)) {
		return
	}
	fd, err := unix.Openat(dir, name, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	defer unix.Close(fd)
	if unix.Fstat(fd, &got) != nil || got.Mode&unix.S_IFMT != unix.S_IFREG || got.Dev != st.Dev || got.Ino != st.Ino || got.Size > int64(len(buf)) {
		return
	}
	for n := int64(0); n < got.Size; {
		k, err := unix.Pread(fd, buf[n:got.Size], n)
		if err != nil || k == 0 {
			return
		}
		n += int64(k)
	}
	return buf[:got.Size], got.Size, time.Unix(got.Mtim.Unix()), true
}

func sameFile(st *unix.Stat_t, fi *syscall.Stat_t) bool {
	return uint64(st.Dev) == uint64(fi.Dev) && uint64(st.Ino) == uint64(fi.Ino)
}
