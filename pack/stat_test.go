package pack

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// statTree holds every kind of entry the walk meets: files (one setuid,
// one empty), names with spaces and non-ASCII letters, directories,
// symlinks to a file, to a directory and to nothing, and a named pipe.
func statTree(t *testing.T) string {
	src := tree(t, map[string]string{"a.txt": "a", "with space.txt": "space", "été/日本.txt": "unicode",
		"sub/deep/f": "deep", "empty": ""})
	os.Chmod(filepath.Join(src, "a.txt"), 0o4755)
	for link, target := range map[string]string{"to-file": "a.txt", "to-dir": "sub", "dangling": "nowhere", "sub/up": ".."} {
		if err := os.Symlink(target, filepath.Join(src, link)); err != nil {
			t.Fatal(err)
		}
	}
	if err := syscall.Mkfifo(filepath.Join(src, "fifo"), 0o600); err != nil {
		t.Fatal(err)
	}
	return src
}

// TestStatAllMatchesLstat: statAll's results are os.Lstat's (a symlink
// as a symlink, not its target), for every kind of entry, and a name
// gone since the listing is an error.
func TestStatAllMatchesLstat(t *testing.T) {
	t.Parallel()
	src := statTree(t)
	for _, dir := range []string{src, filepath.Join(src, "sub"), filepath.Join(src, "été")} {
		l := listDir(dir)
		if l.err != nil {
			t.Fatal(l.err)
		}
		entries, _ := os.ReadDir(dir)
		if len(entries) != len(l.names) {
			t.Errorf("%s: listed %q, want %d entries", dir, l.names, len(entries))
		}
		for i, got := range l.infos {
			want := infoOf(os.Lstat(filepath.Join(dir, l.names[i])))
			if got.err != nil || want.err != nil || got.mode != want.mode || got.size != want.size ||
				!got.mtime.Equal(want.mtime) || got.id != want.id || got.id == (fileID{}) ||
				l.names[i] != entries[i].Name() {
				t.Errorf("%s: statAll %+v, os.Lstat %+v", l.names[i], got, want)
			}
		}
	}
	d, err := openStatDir(src)
	if err != nil {
		t.Fatal(err)
	}
	defer d.close()
	names, _ := d.names(src)
	os.Remove(filepath.Join(src, names[0]))
	if st := statAll(d, names[:1]); !errors.Is(st[0].err, fs.ErrNotExist) {
		t.Errorf("removed entry: error %v, want ErrNotExist", st[0].err)
	}
}

// TestWalkMatchesLstat: with and without --follow-symlinks, the walk
// yields each regular file with os.Lstat's (or os.Stat's) size, time,
// mode and identity, and sameFile accepts the file it then opens.
func TestWalkMatchesLstat(t *testing.T) {
	t.Parallel()
	src := statTree(t)
	for _, follow := range []bool{false, true} {
		want := []string{"a.txt", "empty", "sub/deep/f", "with space.txt", "été/日本.txt"}
		if follow {
			// Followed, a dangling link fails the walk; the links to
			// ".." are loops, skipped.
			os.Remove(filepath.Join(src, "dangling"))
			want = []string{"a.txt", "empty", "sub/deep/f", "to-dir/deep/f", "to-file", "with space.txt", "été/日本.txt"}
		}
		var got []string
		w := &walker{ctx: context.Background(), follow: follow, warn: func(string, string) {}}
		w.visit = func(it item) error {
			got = append(got, it.rel)
			stat := os.Lstat
			if follow {
				stat = os.Stat
			}
			fi, err := stat(it.abs)
			if err != nil || it.size != fi.Size() || !it.mtime.Equal(fi.ModTime()) || it.mode != fi.Mode() || it.id != fileIDOf(fi) {
				t.Errorf("follow %v: %s walked as %+v, stat %v %v", follow, it.rel, it, fi, err)
			}
			f, err := os.Open(it.abs)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if ofi, _ := f.Stat(); !sameFile(it.id, ofi) {
				t.Errorf("follow %v: %s: sameFile refuses the file walked", follow, it.rel)
			}
			return nil
		}
		if err := w.walk(src); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			t.Errorf("follow %v: walked %q, want %q", follow, got, want)
		}
	}
}

// TestSameFile: sameFile tells a file from another renamed over its name.
func TestSameFile(t *testing.T) {
	t.Parallel()
	src := tree(t, map[string]string{"a": "x", "b": "x"})
	a, _ := os.Stat(filepath.Join(src, "a"))
	b, _ := os.Stat(filepath.Join(src, "b"))
	if !sameFile(fileIDOf(a), a) || sameFile(fileIDOf(a), b) || !sameFile(fileID{}, b) {
		t.Error("sameFile: want a same as a, not as b, and an unknown id same as any")
	}
}

// TestListDirManyNames: a directory whose entries take several reads
// of the directory is listed whole, sorted, each name once.
func TestListDirManyNames(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	long := strings.Repeat("n", 100)
	var want []string
	for i := range 1500 { // about 180 KB of directory entries
		name := fmt.Sprintf("%s-%04d", long, 1499-i)
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		want = append(want, name)
	}
	slices.Sort(want)
	l := listDir(dir)
	if l.err != nil || !slices.Equal(l.names, want) || len(l.infos) != len(want) {
		t.Fatalf("listed %d names (error %v), want %d in order", len(l.names), l.err, len(want))
	}
	if l := listDir(filepath.Join(dir, "missing")); !errors.Is(l.err, fs.ErrNotExist) {
		t.Errorf("missing directory: error %v, want ErrNotExist", l.err)
	}
}

// TestJoinAbs: joinAbs is filepath.Join for the clean directories the
// walk gives it.
func TestJoinAbs(t *testing.T) {
	t.Parallel()
	for _, dir := range []string{".", "/", "a", "/a/b", "../a"} {
		if got, want := joinAbs(dir, "f"), filepath.Join(dir, "f"); got != want {
			t.Errorf("joinAbs(%q, f) = %q, want %q", dir, got, want)
		}
	}
}
