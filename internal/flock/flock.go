// Package flock is the one way rsdump keeps two runs apart: an advisory
// whole-file lock (flock(2)) on a file the run holds open, taken without
// waiting and released before the file is closed. deststate locks a
// Destination's tree with it, transfer each download's .part file.
package flock

import "errors"

// ErrHeld is a lock another open file holds: another run is at work.
var ErrHeld = errors.New("locked by another run")
