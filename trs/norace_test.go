//go:build !race

package trs

const raceEnabled = false
