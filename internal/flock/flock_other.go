//go:build !unix

package flock

import "os"

// Try does nothing where flock(2) is not available: keeping two runs
// apart is then the user's to do.
func Try(*os.File, bool) error { return nil }

// Close closes f.
func Close(f *os.File) error { return f.Close() }
