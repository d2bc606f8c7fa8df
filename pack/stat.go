package pack

import (
	"io/fs"
	"time"
)

// statInfo is an entry's lstat result: what the walk and the join need,
// held by value so that a listing costs no allocation per entry.
type statInfo struct {
	mode  fs.FileMode
	size  int64
	mtime time.Time
	id    fileID // the file's identity, for sameFile
	err   error
}

// infoOf is the statInfo of an os stat result.
func infoOf(fi fs.FileInfo, err error) statInfo {
	if err != nil {
		return statInfo{err: err}
	}
	return statInfo{mode: fi.Mode(), size: fi.Size(), mtime: fi.ModTime(), id: fileIDOf(fi)}
}
