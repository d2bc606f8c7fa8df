package deststate

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/rsdump/rsdump/internal/flock"
)

// ErrLocked is a tree another run holds.
var ErrLocked = errors.New("another rsdump run holds the tree")

// LockedError says which run holds the tree, as the lock file names it.
type LockedError struct {
	Holder string // "rsdump sync, pid 1234, since 2026-11-27T10:00:00Z", or "" when not known
}

func (e *LockedError) Error() string {
	if e.Holder == "" {
		return ErrLocked.Error()
	}
	return "the tree is in use by " + e.Holder
}

// Unwrap makes errors.Is(err, ErrLocked) hold.
func (e *LockedError) Unwrap() error { return ErrLocked }

// takeLock takes an advisory lock on name, so that two runs never stage
// into, or apply changes to, the same tree at once, and writes into it
// who holds it. A worker of a sharded restore (shared) takes it shared:
// workers run together, and no other run while any does.
func takeLock(root *os.Root, name, command string, shared bool) (*os.File, error) {
	f, err := root.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	err = flock.Try(f, shared)
	if errors.Is(err, flock.ErrHeld) {
		defer f.Close()
		return nil, busy(f)
	}
	if err == nil {
		err = writeHolder(f, command)
	}
	if err != nil {
		flock.Close(f)
		return nil, err
	}
	return f, nil
}

// writeHolder records in the lock file the run that holds it.
func writeHolder(f *os.File, command string) error {
	if command == "" {
		command = "run"
	}
	line := fmt.Sprintf("rsdump %s, pid %d, since %s\n", command, os.Getpid(), time.Now().UTC().Format(time.RFC3339))
	if err := f.Truncate(0); err != nil {
		return err
	}
	_, err := f.WriteAt([]byte(line), 0)
	return err
}

// busy is the error for a lock another run holds, naming it.
func busy(f *os.File) error {
	b, _ := io.ReadAll(io.LimitReader(f, 200))
	holder := strings.TrimSpace(string(b))
	if !strings.HasPrefix(holder, "rsdump ") || strings.ContainsAny(holder, "\n\r") {
		holder = ""
	}
	return &LockedError{Holder: holder}
}
