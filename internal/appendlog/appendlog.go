// Package appendlog opens the append-only logs of JSON lines that rsdump
// keeps (a Destination's written log, a kept stage's journal, the hub's
// state) so that a line a crash cut short loses only itself. Appending
// after a torn last line would glue the next record to it, and a reader,
// which passes over a line that does not decode, would lose both: Open
// ends such a line with a newline first, so that what is appended after
// stands on a line of its own and is read back.
package appendlog

import (
	"fmt"
	"io/fs"
	"os"
)

// FS opens files: *os.Root satisfies it, and OS takes ordinary paths.
type FS interface {
	OpenFile(name string, flag int, perm fs.FileMode) (*os.File, error)
}

type osFS struct{}

func (osFS) OpenFile(name string, flag int, perm fs.FileMode) (*os.File, error) {
	return os.OpenFile(name, flag, perm)
}

// OS is the file system at large, with ordinary paths.
var OS FS = osFS{}

// Open opens name in fsys for appending lines, creating it with perm
// when it does not exist; extra adds flags (os.O_TRUNC, say). A file
// whose last byte is not a newline (a line torn by a crash, or a write
// that failed half-way) is given one before Open returns. The file is
// open for reading too, which the check needs.
func Open(fsys FS, name string, extra int, perm fs.FileMode) (*os.File, error) {
	f, err := fsys.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_APPEND|extra, perm)
	if err != nil {
		return nil, err
	}
	if err := EndLine(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: ending its torn last line: %w", name, err)
	}
	return f, nil
}

// EndLine writes a newline at the end of f, open for reading and
// appending, unless f is empty or ends with one already.
func EndLine(f *os.File) error {
	fi, err := f.Stat()
	if err != nil || fi.Size() == 0 {
		return err
	}
	var last [1]byte
	if _, err := f.ReadAt(last[:], fi.Size()-1); err != nil {
		return err
	}
	if last[0] == '\n' {
		return nil
	}
	_, err = f.Write([]byte{'\n'})
	return err
}
