//go:build unix

package deststate

import (
	"errors"
	"os"
	"syscall"
)

// takeLock takes an exclusive advisory lock on name, so that two runs
// never stage into, or apply changes to, the same tree at once, and
// writes into it who holds it.
func takeLock(root *os.Root, name, command string) (*os.File, error) {
	f, err := root.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		defer f.Close()
		return nil, busy(f)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	if err := writeHolder(f, command); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}
