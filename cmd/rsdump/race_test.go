//go:build race

package main

// raceDetector says the tests run under -race, whose shadow memory
// inflates a process's RSS several times.
const raceDetector = true
