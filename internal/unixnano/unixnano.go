// Package unixnano is the one encoding of a time in rsdump's binary and
// sorted records: nanoseconds since the Unix epoch, with the zero time
// (none known) as 0, so that "no time" survives the round trip and sorts
// first. A time read back is in UTC.
package unixnano

import "time"

// Of is t in nanoseconds since the epoch; 0 for the zero time.
func Of(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// Time is the UTC time n nanoseconds after the epoch; the zero time for 0.
func Time(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}
