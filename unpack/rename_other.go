//go:build !unix

package unpack

import "path"

// renameInto renames the staged file name to base in the directory h.
func renameInto(s *stage, name string, h *dirHandle, base string) error {
	return h.tree.Rename(path.Join(s.name, name), path.Join(h.path, base))
}
