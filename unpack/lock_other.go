//go:build !unix

package unpack

import "os"

// lockFile only creates the lock file where flock(2) is not available:
// running two unpacks into one tree at once is then the user's to avoid.
func lockFile(root *os.Root, name string) (*os.File, error) {
	return root.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
}
