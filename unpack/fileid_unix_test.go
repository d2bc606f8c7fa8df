//go:build unix

package unpack_test

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// fileID is a file's inode and ctime: a file rewritten, renamed over, or
// touched (even to the same mtime) changes them.
func fileID(path string) (string, error) {
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil {
		return "", err
	}
	sec, nsec := st.Ctim.Unix()
	return fmt.Sprintf("%d:%d.%09d", st.Ino, sec, nsec), nil
}
