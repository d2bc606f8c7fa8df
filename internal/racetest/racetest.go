// Package racetest tells tests whether they run under the race detector,
// which makes Go code several times slower and adds nothing to a test of
// one goroutine's handling of a large volume of data (a 4 GiB ZIP64
// archive, a million Metalink pieces). Such tests skip under -race, as
// under -short; .ci/run runs them in a step of their own without -race.
package racetest

import "testing"

// SkipLarge skips t under -short and under -race, saying why: what names
// the data it moves ("a 4 GiB archive").
func SkipLarge(t testing.TB, what string) {
	t.Helper()
	switch {
	case testing.Short():
		t.Skipf("skipping %s in -short mode", what)
	case Enabled:
		t.Skipf("skipping %s under -race (.ci/run runs it without -race)", what)
	}
}
