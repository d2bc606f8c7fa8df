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
//
// A worker of a sharded restore (shared) takes it shared: workers run
// together, and no other run while any does. flock is honoured across
// machines on NFS (Linux emulates it with byte-range locks) and on Lustre
// mounted with -o flock.
func takeLock(root *os.Root, name, command string, shared bool) (*os.File, error) {
	f, err := root.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	how := syscall.LOCK_EX
	if shared {
		how = syscall.LOCK_SH
	}
	err = syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB)
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

// releaseLock releases the lock and closes f. The lock is released
// explicitly, not by the close alone: flock belongs to the open file, and
// a process this one starts at that moment holds a copy of it between its
// fork and its exec (the descriptor is close-on-exec, not close-on-fork),
// which would keep the tree locked, "in use by" this very process, for a
// next run that opens it then.
func releaseLock(f *os.File) {
	syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	f.Close()
}
