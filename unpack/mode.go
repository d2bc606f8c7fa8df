package unpack

import (
	"archive/zip"
	"io/fs"
)

// Creators whose external attributes carry a Unix mode in their upper 16
// bits (APPNOTE 4.4.2; archive/zip reads the same two).
const (
	creatorUnix  = 3
	creatorMacOS = 19
)

// recordedPerm returns the permission bits an entry records, when its
// creator is Unix and it records a mode: only the 0777 bits, never setuid,
// setgid or sticky. An entry without a Unix mode (a ZIP from Windows, say)
// records none, and its file gets the default.
func recordedPerm(f *zip.File) (fs.FileMode, bool) {
	if f == nil {
		return 0, false
	}
	switch f.CreatorVersion >> 8 {
	case creatorUnix, creatorMacOS:
	default:
		return 0, false
	}
	mode := f.ExternalAttrs >> 16
	if mode == 0 {
		return 0, false
	}
	return fs.FileMode(mode & 0o777), true
}
