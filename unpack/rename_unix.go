//go:build unix

package unpack

import (
	"fmt"
	"path"

	"golang.org/x/sys/unix"
)

// land renames name, a staged file or directory, to base in the tree's
// directory h, relative to the two open directories: no path is walked
// again.
func (s *stage) land(name string, h *dirHandle, base string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	from, err := s.dirs.lookup(path.Dir(name))
	if err == nil && from == nil {
		err = fmt.Errorf("%s: not staged", name)
	}
	if err != nil {
		return err
	}
	return unix.Renameat(from.fd, path.Base(name), h.fd, base)
}
