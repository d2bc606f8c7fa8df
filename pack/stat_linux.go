package pack

import (
	"io/fs"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// fileID is a file's device and inode; the zero value is unknown.
type fileID struct{ dev, ino uint64 }

func fileIDOf(fi fs.FileInfo) fileID {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return fileID{uint64(st.Dev), uint64(st.Ino)}
	}
	return fileID{}
}

// sameFile reports whether fi, from an open file's Stat, is the file
// walked as id, as os.SameFile would; an unknown id matches any file.
func sameFile(id fileID, fi fs.FileInfo) bool {
	return id == fileID{} || id == fileIDOf(fi)
}

// statDir lstats names in one directory with fstatat on its descriptor:
// os.Root.Lstat does the same call, but checks and cleans the name and
// allocates a FileInfo for each, which cost about a tenth of the CPU of
// a pack --changes that finds little changed.
type statDir struct{ fd int }

func openStatDir(abs string) (statDir, error) {
	for {
		fd, err := unix.Open(abs, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return statDir{}, &fs.PathError{Op: "open", Path: abs, Err: err}
		}
		return statDir{fd}, nil
	}
}

func (d statDir) close() { unix.Close(d.fd) }

// direntBufs are getdents buffers, reused across directories.
var direntBufs = sync.Pool{New: func() any { return new([32 << 10]byte) }}

// names reads the directory's entry names but "." and "..", in the
// order the system gives them. abs names it in errors.
func (d statDir) names(abs string) ([]string, error) {
	buf := direntBufs.Get().(*[32 << 10]byte)
	defer direntBufs.Put(buf)
	var names []string
	for {
		n, err := unix.ReadDirent(d.fd, buf[:])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, &fs.PathError{Op: "readdirent", Path: abs, Err: err}
		}
		if n <= 0 {
			return names, nil
		}
		_, _, names = unix.ParseDirent(buf[:n], -1, names)
	}
}

func (d statDir) lstat(name string) statInfo {
	var st unix.Stat_t
	for {
		err := unix.Fstatat(d.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return statInfo{err: &fs.PathError{Op: "lstat", Path: name, Err: err}}
		}
		return statInfo{mode: modeOf(st.Mode), size: st.Size, mtime: time.Unix(int64(st.Mtim.Sec), int64(st.Mtim.Nsec)),
			id: fileID{uint64(st.Dev), uint64(st.Ino)}}
	}
}

// modeOf converts a st_mode as os does (os.fillFileStatFromSys), so that
// a walk's modes are those of os.Lstat.
func modeOf(m uint32) fs.FileMode {
	mode := fs.FileMode(m & 0o777)
	switch m & unix.S_IFMT {
	case unix.S_IFBLK:
		mode |= fs.ModeDevice
	case unix.S_IFCHR:
		mode |= fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFDIR:
		mode |= fs.ModeDir
	case unix.S_IFIFO:
		mode |= fs.ModeNamedPipe
	case unix.S_IFLNK:
		mode |= fs.ModeSymlink
	case unix.S_IFSOCK:
		mode |= fs.ModeSocket
	}
	if m&unix.S_ISGID != 0 {
		mode |= fs.ModeSetgid
	}
	if m&unix.S_ISUID != 0 {
		mode |= fs.ModeSetuid
	}
	if m&unix.S_ISVTX != 0 {
		mode |= fs.ModeSticky
	}
	return mode
}
