//go:build unix

package flock

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

func open(t *testing.T, name string) *os.File {
	t.Helper()
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// Locks conflict as flock(2)'s do: exclusive against any, shared
// beside shared; a conflict is ErrHeld, at once.
func TestTry(t *testing.T) {
	t.Parallel()
	name := filepath.Join(t.TempDir(), "lock")
	for _, tc := range []struct {
		first, second bool // shared
		held          bool
	}{
		{false, false, true},
		{false, true, true},
		{true, false, true},
		{true, true, false},
	} {
		a, b := open(t, name), open(t, name)
		if err := Try(a, tc.first); err != nil {
			t.Fatal(err)
		}
		err := Try(b, tc.second)
		if got := errors.Is(err, ErrHeld); got != tc.held || err != nil && !got {
			t.Errorf("shared %v then shared %v: %v, want held %v", tc.first, tc.second, err, tc.held)
		}
		Close(a)
		Close(b)
	}
}

// A copy of the descriptor, such as a program started at that moment
// holds between its fork and its exec, does not keep the lock once
// Close has run.
func TestCloseReleasesLockHeldByCopy(t *testing.T) {
	t.Parallel()
	name := filepath.Join(t.TempDir(), "lock")
	a := open(t, name)
	if err := Try(a, false); err != nil {
		t.Fatal(err)
	}
	copyFD, err := syscall.Dup(int(a.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(copyFD)
	if err := Close(a); err != nil {
		t.Fatal(err)
	}
	if err := Try(open(t, name), false); err != nil {
		t.Fatalf("after Close: %v", err)
	}
}
