package unpack

import (
	"os"

	"golang.org/x/sys/unix"
)

// syncfsWorks: a package's staged files are made durable by one
// syncfs(2) of their file system rather than one fsync each. A variable,
// so that tests run the path of systems without it here too.
var syncfsWorks = true

// syncfs writes out every file and directory of the file system that
// holds f, and waits until they are on disk.
func syncfs(f *os.File) error {
	return unix.Syncfs(int(f.Fd()))
}
