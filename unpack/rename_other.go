//go:build !unix

package unpack

import "path"

// land renames name, a staged file or directory, to base in the tree's
// directory h.
func (s *stage) land(name string, h *dirHandle, base string) error {
	return h.tree.Rename(path.Join(s.name, name), path.Join(h.path, base))
}
