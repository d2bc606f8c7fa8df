//go:build unix

package deststate

import (
	"syscall"
	"testing"
)

// A copy of the lock's descriptor, such as a program started at that
// moment holds between its fork and its exec, does not keep the tree
// locked once the run that took the lock closes it.
func TestCloseReleasesLockHeldByCopy(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	d, err := Open(dir, Options{Command: "audit"})
	if err != nil {
		t.Fatal(err)
	}
	copyFD, err := syscall.Dup(int(d.lock.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(copyFD)
	d.Close()
	d2, err := Open(dir, Options{Command: "sync"})
	if err != nil {
		t.Fatalf("after the run closed: %v", err)
	}
	d2.Close()
}
