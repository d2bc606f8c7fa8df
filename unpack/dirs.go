package unpack

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
)

// dirs keeps directories of the tree open, so that the many files of one
// directory are looked up and renamed relative to it rather than through
// the whole path each time. Each is opened through the tree's os.Root, so
// the rules that keep unpack inside the tree hold; only a final name, one
// component checked by pkgread.SafeName, is then resolved in it.
type dirs struct {
	tree *os.Root
	open map[string]*dirHandle // nil: known not to exist
}

type dirHandle struct {
	path string   // relative to the tree
	root *os.Root // the directory
	f    *os.File // the same directory, for renameat
	fd   int      // f's descriptor
	tree *os.Root // the root it was opened in
}

// maxOpenDirs bounds the directories held open: bitstreams come sorted
// by name, so a directory's files come together and a small set suffices.
const maxOpenDirs = 64

func newDirs(tree *os.Root) *dirs { return &dirs{tree: tree, open: map[string]*dirHandle{}} }

// lookup returns the directory dir of the tree, or nil when it does not
// exist.
func (c *dirs) lookup(dir string) (*dirHandle, error) {
	if h, ok := c.open[dir]; ok {
		return h, nil
	}
	h, err := c.openDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		c.keep(dir, nil)
		return nil, nil
	}
	if err != nil {
		return nil, c.notDir(dir, err)
	}
	c.keep(dir, h)
	return h, nil
}

// make returns the directory dir of the tree, creating it and its parents
// when needed.
func (c *dirs) make(dir string) (*dirHandle, error) {
	if h := c.open[dir]; h != nil {
		return h, nil
	}
	if err := c.tree.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	h, err := c.openDir(dir)
	if err != nil {
		return nil, err
	}
	c.keep(dir, h)
	return h, nil
}

// notDir is the error for a directory of the tree that cannot be opened:
// an obstacle when it, or one above it, is something other than a
// directory (os.Root does not say ENOTDIR), else err.
func (c *dirs) notDir(dir string, err error) error {
	for d := range ancestors(dir + "/") {
		fi, lerr := c.tree.Lstat(d)
		if lerr == nil && !fi.IsDir() {
			return &obstacle{fmt.Sprintf("%s is %s, where a directory is needed", d, kindOf(fi.Mode()))}
		}
	}
	return err
}

func (c *dirs) openDir(dir string) (*dirHandle, error) {
	r, err := c.tree.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	f, err := c.tree.Open(dir)
	if err != nil {
		r.Close()
		return nil, err
	}
	return &dirHandle{path: dir, root: r, f: f, fd: int(f.Fd()), tree: c.tree}, nil
}

func (c *dirs) keep(dir string, h *dirHandle) {
	if len(c.open) >= maxOpenDirs {
		c.close()
	}
	c.open[dir] = h
}

// forget drops what is known of dir, which was just removed: a handle
// held open would still name the removed directory, and a file renamed
// into it would be lost with it.
func (c *dirs) forget(dir string) {
	if h := c.open[dir]; h != nil {
		h.root.Close()
		h.f.Close()
	}
	delete(c.open, dir)
}

func (c *dirs) close() {
	for dir, h := range c.open {
		if h != nil {
			h.root.Close()
			h.f.Close()
		}
		delete(c.open, dir)
	}
}

// target is the directory of rel, nil when it does not exist, and rel's
// final name.
func (c *dirs) target(rel string) (*dirHandle, string, error) {
	dir, base := path.Split(rel)
	h, err := c.lookup(path.Clean(dir))
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w", rel, err)
	}
	return h, base, nil
}

// check refuses a target that is a symbolic link or a directory, or whose
// parent cannot be reached inside the tree. It returns the target's info,
// or nil when it does not exist.
func (c *dirs) check(rel string) (fs.FileInfo, error) {
	h, base, err := c.target(rel)
	if h == nil || err != nil {
		return nil, err
	}
	return targetInfo(rel, lstat(h, base))
}

type statResult struct {
	fi  fs.FileInfo
	err error
}

func lstat(h *dirHandle, base string) statResult {
	fi, err := h.root.Lstat(base)
	return statResult{fi, err}
}

func targetInfo(rel string, st statResult) (fs.FileInfo, error) {
	fi, err := st.fi, st.err
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil
	case err != nil:
		return nil, err
	case fi.Mode()&fs.ModeSymlink != 0:
		return nil, fmt.Errorf("%s is a symbolic link; not replaced", rel)
	case !fi.Mode().IsRegular():
		return nil, &obstacle{fmt.Sprintf("%s exists and is %s", rel, kindOf(fi.Mode()))}
	}
	return fi, nil
}

// An obstacle is something in the tree where a bitstream is to land: a
// directory (or another kind of file) at its name, or a file where it
// needs a directory. A package that deletes it may still land the
// bitstream: a directory that became a file at the Source, and a file
// that became a directory, change in one run.
type obstacle struct{ msg string }

func (o *obstacle) Error() string { return o.msg }

func isObstacle(err error) bool {
	var o *obstacle
	return errors.As(err, &o)
}

// kindOf names a file's type in words, for messages.
func kindOf(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	case m.IsRegular():
		return "a file"
	}
	return "not a regular file"
}
