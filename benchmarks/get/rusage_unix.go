//go:build unix

package main

import (
	"os"
	"syscall"
)

// maxRSS is a finished process's peak RSS, in KB on Linux.
func maxRSS(ps *os.ProcessState) int64 {
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
		return ru.Maxrss
	}
	return 0
}
