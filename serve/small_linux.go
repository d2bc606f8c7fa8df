//go:build linux

package serve

import (
	"os"
	"strings"
	"sync"
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
// directory and its os.Root and os.File for each; a name dir/file, with
// dirs, an fstatat of dir in their place while dirs holds dir open (see
// dirCache). ok is false whenever the name is anything else or anything
// fails, with nothing left open but what dirs holds: open's walk judges
// the name then. dir is the resources' root, open.
func readSmall(dir *os.File, dirs *dirCache, name string, hide os.FileInfo, buf []byte) (b []byte, size int64, mtime time.Time, ok bool) {
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
	rc.Control(func(root uintptr) {
		if d, rest, more := strings.Cut(name, "/"); more && dirs != nil && !strings.Contains(rest, "/") {
			b, size, mtime, ok = dirs.readAt(int(root), d, rest, h, buf)
			return
		}
		b, size, mtime, ok = readSmallAt(int(root), name, h, buf)
	})
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
	return readFileAt(dir, name, buf)
}

// readFileAt reads whole into buf the regular file name in dir.
func readFileAt(dir int, name string, buf []byte) (b []byte, size int64, mtime time.Time, ok bool) {
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

// dirCache keeps open the directories at the top of the resources that
// readSmall went through last, so that a name dir/file in one of them
// takes an fstatat of dir, not an openat, an fstat and a close: a list's
// resources come a directory after another. A directory is taken from
// the cache only when dir names it now (the same device and inode, not
// a link: the inode of a directory held open is not reused), so that
// one moved, replaced or linked away is seen at once, and was compared
// with hide when it was opened. Names deeper down go readSmallAt's
// way: a name through several directories could reach a cached one by
// way of a link the fstatat would follow.
type dirCache struct {
	mu     sync.Mutex
	dirs   [dirCacheSize]*cachedDir
	next   int // the slot put fills next
	closed bool
}

// dirCacheSize is how many directories a dirCache keeps open.
const dirCacheSize = 16

type cachedDir struct {
	name     string
	fd       int
	dev, ino uint64
	refs     int // the cache's and its users'; under dirCache.mu
}

func newDirCache() *dirCache { return &dirCache{} }

// readAt reads file in the directory dir of root, as readSmallAt would
// read dir/file.
func (c *dirCache) readAt(root int, dir, file string, hide *syscall.Stat_t, buf []byte) (b []byte, size int64, mtime time.Time, ok bool) {
	if dir == "." || dir == ".." || dir == "" { // safepath's already
		return
	}
	var st unix.Stat_t
	if unix.Fstatat(root, dir, &st, unix.AT_SYMLINK_NOFOLLOW) != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return
	}
	d := c.get(dir, &st)
	if d == nil {
		fd, err := unix.Openat(root, dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return
		}
		var got unix.Stat_t
		if unix.Fstat(fd, &got) != nil || got.Dev != st.Dev || got.Ino != st.Ino || hide != nil && sameFile(&got, hide) {
			unix.Close(fd)
			return
		}
		d = c.put(dir, fd, &got)
	}
	defer c.release(d)
	return readFileAt(d.fd, file, buf)
}

// get returns the cached directory name that is st, taken for use.
func (c *dirCache) get(name string, st *unix.Stat_t) *cachedDir {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, d := range c.dirs {
		if d != nil && d.name == name && d.dev == uint64(st.Dev) && d.ino == uint64(st.Ino) {
			d.refs++
			return d
		}
	}
	return nil
}

// put caches fd, the directory name that is st, in the place of the
// oldest, and returns it taken for use. Once the cache is closed, fd is
// its user's alone.
func (c *dirCache) put(name string, fd int, st *unix.Stat_t) *cachedDir {
	d := &cachedDir{name: name, fd: fd, dev: uint64(st.Dev), ino: uint64(st.Ino), refs: 1}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return d
	}
	for i, old := range c.dirs {
		if old != nil && old.name == name { // replaced: name is another directory now
			c.dirs[i] = nil
			c.dropLocked(old)
		}
	}
	if old := c.dirs[c.next]; old != nil {
		c.dropLocked(old)
	}
	d.refs++
	c.dirs[c.next] = d
	c.next = (c.next + 1) % dirCacheSize
	return d
}

func (c *dirCache) release(d *cachedDir) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.dropLocked(d)
}

// dropLocked gives up one hold on d, and closes it after the last.
func (c *dirCache) dropLocked(d *cachedDir) {
	if d.refs--; d.refs == 0 {
		unix.Close(d.fd)
	}
}

// close closes the directories, each once its last user is done.
func (c *dirCache) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	for i, d := range c.dirs {
		if d != nil {
			c.dirs[i] = nil
			c.dropLocked(d)
		}
	}
}
