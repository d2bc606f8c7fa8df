//go:build !race

package main

// raceDetector says the tests run under -race (race_test.go).
const raceDetector = false
