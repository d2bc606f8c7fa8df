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

// names reads the directory's entry names; abs names it in errors.
func (d statDir) names(abs string) ([]string, error) {
	f, err := d.root.Open(".")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		return nil, &fs.PathError{Op: "readdirent", Path: abs, Err: err}
	}
	return names, nil
}

func (d statDir) lstat(name string) statInfo { return infoOf(d.root.Lstat(name)) }
