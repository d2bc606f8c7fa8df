//go:build !linux

package pack

import (
	"io/fs"
	"os"
)

// fileID is a file's identity, as os.SameFile compares it; the zero value
// is unknown.
type fileID struct{ fi fs.FileInfo }

func fileIDOf(fi fs.FileInfo) fileID { return fileID{fi} }

// sameFile reports whether fi, from an open file's Stat, is the file
// walked as id; an unknown id matches any file.
func sameFile(id fileID, fi fs.FileInfo) bool {
	return id.fi == nil || os.SameFile(id.fi, fi)
}

// statDir lstats names in one directory through os.Root, which resolves
// one name rather than the whole path.
type statDir struct{ root *os.Root }

func openStatDir(abs string) (statDir, error) {
	root, err := os.OpenRoot(abs)
	return statDir{root}, err
}

func (d statDir) close() { d.root.Close() }

func (d statDir) lstat(name string) statInfo { return infoOf(d.root.Lstat(name)) }
