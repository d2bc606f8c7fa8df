//go:build !race

package replica_test

// raceDetector says the tests run under -race (race_test.go).
const raceDetector = false
