//go:build unix

package unpack

import "golang.org/x/sys/unix"

// renameInto renames the staged file name to base in the directory h,
// relative to the two open directories: no path is walked again.
func renameInto(s *stage, name string, h *dirHandle, base string) error {
	return unix.Renameat(int(s.dir.Fd()), name, int(h.f.Fd()), base)
}
