package sink

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/rsdump/rsdump/internal/atomic"
)

// Dir is a sink in a local directory.
type Dir struct{ dir string }

// OpenDir returns the sink in dir, creating it if missing.
func OpenDir(dir string) (*Dir, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	return &Dir{dir: dir}, nil
}

func (d *Dir) Loc(name string) string { return filepath.Join(d.dir, filepath.FromSlash(name)) }

func (d *Dir) Create(_ context.Context, name string) (File, error) {
	if err := d.mkdirFor(name); err != nil {
		return nil, err
	}
	f, err := atomic.Create(d.Loc(name), 0o644)
	if err != nil {
		return nil, err
	}
	return dirFile{f}, nil
}

// Resume starts afresh: a temporary file is not resumed.
func (d *Dir) Resume(ctx context.Context, name, _ string) (File, error) { return d.Create(ctx, name) }

func (d *Dir) WriteFile(_ context.Context, name string, data []byte) error {
	if err := d.mkdirFor(name); err != nil {
		return err
	}
	return atomic.WriteFile(d.Loc(name), data, 0o644)
}

func (d *Dir) WriteNew(_ context.Context, name string, data []byte) error {
	if err := d.mkdirFor(name); err != nil {
		return err
	}
	return atomic.WriteNew(d.Loc(name), data, 0o644)
}

// Append writes at the end of the file and syncs it; a new file's
// directory entry is synced too.
func (d *Dir) Append(_ context.Context, name string, data []byte) error {
	if err := d.mkdirFor(name); err != nil {
		return err
	}
	_, statErr := os.Lstat(d.Loc(name))
	f, err := os.OpenFile(d.Loc(name), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil && errors.Is(statErr, fs.ErrNotExist) {
		err = atomic.SyncDir(filepath.Dir(d.Loc(name)))
	}
	return err
}

func (d *Dir) mkdirFor(name string) error {
	if err := checkName(name); err != nil {
		return err
	}
	if dir := path.Dir(name); dir != "." {
		return os.MkdirAll(d.Loc(dir), 0o755)
	}
	return nil
}

func (d *Dir) Open(_ context.Context, name string) (io.ReadCloser, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	return os.Open(d.Loc(name))
}

func (d *Dir) Stat(_ context.Context, name string) (Info, error) {
	if err := checkName(name); err != nil {
		return Info{}, err
	}
	fi, err := os.Stat(d.Loc(name))
	if err != nil {
		return Info{}, err
	}
	if !fi.Mode().IsRegular() {
		return Info{}, fmt.Errorf("%s: not a regular file", d.Loc(name))
	}
	return Info{Name: name, Size: fi.Size(), ModTime: fi.ModTime()}, nil
}

func (d *Dir) List(ctx context.Context, prefix string, fn func(Info) error) error {
	var infos []Info
	// Only the directory the prefix names is walked: claims (a directory
	// of their own) are listed often, and must not cost a walk of every
	// package.
	start := d.dir
	if i := strings.LastIndexByte(prefix, '/'); i > 0 {
		start = d.Loc(prefix[:i])
		if _, err := os.Stat(start); errors.Is(err, fs.ErrNotExist) {
			return nil
		}
	}
	err := filepath.WalkDir(start, func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() || !e.Type().IsRegular() {
			return err
		}
		rel, _ := filepath.Rel(d.dir, p)
		rel = filepath.ToSlash(rel)
		if !strings.HasPrefix(rel, prefix) || isTemp(e.Name()) {
			return nil
		}
		fi, err := e.Info()
		if errors.Is(err, fs.ErrNotExist) {
			return nil // removed since the directory was read: a claim's probe
		}
		if err != nil {
			return err
		}
		infos = append(infos, Info{Name: rel, Size: fi.Size(), ModTime: fi.ModTime()})
		return nil
	})
	if err != nil {
		return err
	}
	sort.Slice(infos, func(i, j int) bool { return infos[i].Name < infos[j].Name })
	for _, in := range infos {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := fn(in); err != nil {
			return err
		}
	}
	return nil
}

func (d *Dir) Remove(_ context.Context, name string) error {
	if err := checkName(name); err != nil {
		return err
	}
	if err := os.Remove(d.Loc(name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// Pending lists internal/atomic's temporary files, ".NAME.RANDOM.tmp".
func (d *Dir) Pending(context.Context) ([]Pending, error) {
	var ps []Pending
	err := filepath.WalkDir(d.dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() || !isTemp(e.Name()) {
			return err
		}
		base := strings.TrimSuffix(strings.TrimPrefix(e.Name(), "."), ".tmp")
		base = base[:strings.LastIndexByte(base, '.')]
		rel, _ := filepath.Rel(d.dir, filepath.Join(filepath.Dir(p), base))
		ps = append(ps, Pending{Name: filepath.ToSlash(rel), ID: p})
		return nil
	})
	return ps, err
}

func (d *Dir) Discard(_ context.Context, p Pending) error {
	if !isTemp(filepath.Base(p.ID)) || !strings.HasPrefix(p.ID, d.dir) {
		return fmt.Errorf("%s: not a temporary file of %s", p.ID, d.dir)
	}
	if err := os.Remove(p.ID); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// isTemp recognises internal/atomic's temporary names.
func isTemp(base string) bool {
	if !strings.HasPrefix(base, ".") || !strings.HasSuffix(base, ".tmp") {
		return false
	}
	mid := strings.TrimSuffix(base[1:], ".tmp")
	return strings.LastIndexByte(mid, '.') > 0
}

type dirFile struct{ f *atomic.File }

func (f dirFile) Write(p []byte) (int, error) { return f.f.Write(p) }
func (f dirFile) ID() string                  { return "" }
func (f dirFile) Commit() error               { return f.f.Commit() }
func (f dirFile) Abort()                      { f.f.Abort() }

// File is the temporary file, for pack's writeback hints and to cut an
// entry off the end again.
func (f dirFile) File() *os.File { return f.f.File() }
