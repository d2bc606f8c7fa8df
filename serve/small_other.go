//go:build !linux

package serve

import (
	"os"
	"time"
)

// readSmall is open's walk's alone here.
func readSmall(dir *os.File, dirs *dirCache, name string, hide os.FileInfo, buf []byte) (b []byte, size int64, mtime time.Time, ok bool) {
	return nil, 0, time.Time{}, false
}

// dirCache is readSmall's on Linux; there is none here.
type dirCache struct{}

func newDirCache() *dirCache { return nil }

func (c *dirCache) close() {}
