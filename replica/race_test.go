//go:build race

package replica_test

// raceDetector says the tests run under -race, where decoding is several
// times slower: the largest tests take fewer records.
const raceDetector = true
