package serve

import "time"

// SetHoldTime sets how long a Coalesce connection may hold what is
// written to it, for a test, and returns what undoes it.
func SetHoldTime(d time.Duration) (undo func()) {
	old := holdTime
	holdTime = d
	return func() { holdTime = old }
}
