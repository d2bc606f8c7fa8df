package serve

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

var (
	errNotRegular = errors.New("not a regular file")
	errEscapes    = errors.New("leads out of the directory")
	errHidden     = errors.New("in the output directory")
	errLinks      = errors.New("too many symbolic links")
	errChanged    = errors.New("changed while it was opened")
)

// maxLinks is how many symbolic links one name may pass through, as
// os.Root allows.
const maxLinks = 8

// open opens the regular file that name leads to in root. It walks one
// name at a time, each directory opened as a root of its own, so that it
// knows the directories it really passes through: none of them may be
// hide (pack's output directory, whose journal, state and temporary files
// the resources route must not reach by any spelling). Symbolic links are
// followed, when follow is set, as the system does: the target is read
// in the link's directory and ".." climbs back up the directories walked,
// never past root. Only a regular file is opened. root itself is the
// caller's to compare with hide: the directory an open root names does
// not change, so New does it once.
func open(root *os.Root, name string, follow bool, hide os.FileInfo) (*os.File, os.FileInfo, error) {
	w := walk{dirs: []*os.Root{root}, follow: follow, hide: hide}
	defer w.close()
	todo := strings.Split(name, "/")
	for len(todo) > 0 {
		c := todo[0]
		todo = todo[1:]
		if c == "" || c == "." {
			continue
		}
		if c == ".." {
			if err := w.up(); err != nil {
				return nil, nil, err
			}
			continue
		}
		dir := w.dirs[len(w.dirs)-1]
		fi, err := dir.Lstat(c)
		switch {
		case err != nil:
			return nil, nil, err
		case fi.Mode()&fs.ModeSymlink != 0:
			target, err := w.link(dir, c)
			if err != nil {
				return nil, nil, err
			}
			todo = append(target, todo...)
		case len(todo) > 0:
			if err := w.down(dir, c, fi); err != nil {
				return nil, nil, err
			}
		default:
			return openFile(dir, c, fi)
		}
	}
	return nil, nil, errNotRegular // a directory
}

// openFile opens name, which Lstat found to be fi, and checks that the
// file opened is fi: refused before the open unless it is a regular
// file, and should it be replaced in between by a FIFO, the open does
// not wait for a writer (openFlags); by a link, what it leads to is not
// served.
func openFile(dir *os.Root, name string, fi os.FileInfo) (*os.File, os.FileInfo, error) {
	if !fi.Mode().IsRegular() {
		return nil, nil, errNotRegular
	}
	f, err := dir.OpenFile(name, openFlags, 0)
	if err != nil {
		return nil, nil, err
	}
	got, err := f.Stat()
	if err != nil || !got.Mode().IsRegular() || !os.SameFile(fi, got) {
		f.Close()
		return nil, nil, errors.Join(err, errNotRegular)
	}
	return f, got, nil
}

// walk is where open has got to: the directories from the root down.
type walk struct {
	dirs   []*os.Root
	follow bool
	hide   os.FileInfo
	links  int
}

// down enters the directory name, which Lstat found to be fi: the one
// opened must be fi (not a link put in its place), and not hide.
func (w *walk) down(dir *os.Root, name string, fi os.FileInfo) error {
	sub, err := dir.OpenRoot(name)
	if err != nil {
		return err
	}
	w.dirs = append(w.dirs, sub)
	got, err := sub.Stat(".")
	switch {
	case err != nil:
		return err
	case !os.SameFile(fi, got):
		return errChanged
	case w.hide != nil && os.SameFile(got, w.hide):
		return errHidden
	}
	return nil
}

func (w *walk) up() error {
	if len(w.dirs) == 1 {
		return errEscapes
	}
	w.dirs[len(w.dirs)-1].Close()
	w.dirs = w.dirs[:len(w.dirs)-1]
	return nil
}

// link returns the names a symbolic link's target is made of. An
// absolute target is refused, as os.Root refuses it.
func (w *walk) link(dir *os.Root, name string) ([]string, error) {
	if !w.follow {
		return nil, errNotRegular
	}
	if w.links++; w.links > maxLinks {
		return nil, errLinks
	}
	target, err := dir.Readlink(name)
	if err != nil {
		return nil, err
	}
	if filepath.IsAbs(target) || filepath.VolumeName(target) != "" {
		return nil, errEscapes
	}
	return strings.Split(filepath.ToSlash(target), "/"), nil
}

// close closes the directories open opened, not the root it was given.
func (w *walk) close() {
	for _, d := range w.dirs[1:] {
		d.Close()
	}
}
