package transfer

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// Every path a download touches is opened through an os.Root on the
// output directory, as unpack does with its tree: no name and no
// symbolic link already in the directory can make get write, read or
// remove anything outside it. A link to a directory inside the tree is
// followed (the root keeps it inside); a link that leads outside is
// refused, and so is any link in place of the file itself or one of its
// working files, which would otherwise be written through.

// openRoot creates the output directory if need be and opens it as the
// root of every file operation.
func openRoot(dir string) (*os.Root, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	return os.OpenRoot(dir)
}

// ErrSymlink: a symbolic link in the output directory would take a
// download outside it, or is where a file or working file goes.
var ErrSymlink = errors.New("symbolic link not followed")

// The names inside the root of the file and its working files.
func (d *download) relPart() string  { return d.f.Name + partSuffix }
func (d *download) relState() string { return d.f.Name + stateSuffix }

// osPath is rel as a path on the system, for messages and results.
func (d *download) osPath(rel string) string {
	return filepath.Join(d.dir, filepath.FromSlash(rel))
}

// checkLinks refuses the download if the file or one of its working
// files is a symbolic link, or a directory on the way to them is one
// that leads outside the tree; and if a working file is not a regular
// file (a FIFO would hang the read of a state) or has hard links (its
// bytes, written in place, would be another name's too).
func (d *download) checkLinks() error {
	for _, rel := range workPaths(d.f.Name) {
		fi, err := d.root.Lstat(rel)
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			return d.confined(rel, err)
		case fi.Mode()&fs.ModeSymlink != 0:
			return d.linkError(rel, "")
		case rel == d.f.Name: // replaced by a rename, never written through
		case !fi.Mode().IsRegular():
			return fmt.Errorf("%s exists and is not a regular file (%s); not used", d.osPath(rel), fi.Mode().Type())
		case linkCount(fi) > 1:
			return fmt.Errorf("%s has %d hard links, so other names share its bytes; not written", d.osPath(rel), linkCount(fi))
		}
	}
	return nil
}

// confined explains err, from an operation on rel inside the root: when
// a symbolic link on the way leads outside the tree, the error names it.
func (d *download) confined(rel string, err error) error {
	if err == nil {
		return nil
	}
	p := ""
	for c := range strings.SplitSeq(rel, "/") {
		p = path.Join(p, c)
		fi, lerr := d.root.Lstat(p)
		if lerr != nil {
			break
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			continue
		}
		if _, serr := d.root.Stat(p); serr != nil && !errors.Is(serr, fs.ErrNotExist) {
			return d.linkError(p, ", outside "+d.dir)
		}
	}
	return fmt.Errorf("%s: %w", d.osPath(rel), unwrapPath(err))
}

func (d *download) linkError(rel, where string) error {
	to, _ := d.root.Readlink(rel)
	return fmt.Errorf("%s -> %s%s: %w", d.osPath(rel), to, where, ErrSymlink)
}

// unwrapPath drops a *PathError's relative name, which the caller's
// message replaces with the full one.
func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
