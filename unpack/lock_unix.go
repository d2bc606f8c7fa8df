//go:build unix

package unpack

import (
	"errors"
	"os"
	"syscall"
)

// lockFile takes an exclusive advisory lock on name, so that two runs
// never stage into, or apply changes to, the same tree at once.
func lockFile(root *os.Root, name string) (*os.File, error) {
	f, err := root.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		f.Close()
		return nil, errors.New("another rsdump unpack is running in this directory")
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}
