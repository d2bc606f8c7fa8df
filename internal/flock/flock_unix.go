//go:build unix

package flock

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// Try locks f, exclusively or shared, without waiting: ErrHeld when
// another open file holds a lock that conflicts. flock is honoured across
// machines on NFS (Linux emulates it with byte-range locks) and on Lustre
// mounted with -o flock.
func Try(f *os.File, shared bool) error {
	how := unix.LOCK_EX
	if shared {
		how = unix.LOCK_SH
	}
	err := unix.Flock(int(f.Fd()), how|unix.LOCK_NB)
	if errors.Is(err, unix.EWOULDBLOCK) {
		return ErrHeld
	}
	return err
}

// Close releases f's lock and closes f. The lock is released explicitly,
// not by the close alone: flock belongs to the open file, and a program
// started at that moment holds a copy of the descriptor between its fork
// and its exec (it is close-on-exec, not close-on-fork), which would keep
// the lock, "held" by this very process, for a next run that tries then.
func Close(f *os.File) error {
	unix.Flock(int(f.Fd()), unix.LOCK_UN)
	return f.Close()
}
