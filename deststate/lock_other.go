//go:build !unix

package deststate

import "os"

// takeLock only creates the lock file, naming the run, where flock(2) is
// not available: running two runs into one tree at once is then the
// user's to avoid.
func takeLock(root *os.Root, name, command string, _ bool) (*os.File, error) {
	f, err := root.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	if err := writeHolder(f, command); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

func releaseLock(f *os.File) { f.Close() }
