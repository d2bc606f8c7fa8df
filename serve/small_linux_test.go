//go:build linux

package serve

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// readSmall takes only a small regular file on a way of plain
// directories, none of them hide; anything else is left to open's walk,
// and nothing waits (a FIFO).
func TestReadSmall(t *testing.T) {
	t.Parallel()
	d := t.TempDir()
	for name, content := range map[string]string{"a/b/f.txt": "plain", "a/big.bin": "0123456789", "out/j": "journal", "top.txt": "top"} {
		p := filepath.Join(d, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(content), 0o644)
	}
	os.Symlink("b", filepath.Join(d, "a", "lb"))
	os.Symlink("f.txt", filepath.Join(d, "a", "b", "lf"))
	if err := syscall.Mkfifo(filepath.Join(d, "a", "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	dir, err := os.Open(d)
	if err != nil {
		t.Fatal(err)
	}
	defer dir.Close()
	hide, err := os.Stat(filepath.Join(d, "out"))
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 8)
	for name, want := range map[string]string{"a/b/f.txt": "plain", "top.txt": "top"} {
		b, size, mtime, ok := readSmall(dir, nil, name, hide, buf)
		fi, _ := os.Stat(filepath.Join(d, name))
		if !ok || string(b) != want || size != int64(len(want)) || !mtime.Equal(fi.ModTime()) {
			t.Errorf("%s: %q, %d, %v, %v", name, b, size, mtime, ok)
		}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for _, name := range []string{"a/big.bin", "out/j", "a/lb/f.txt", "a/b/lf", "a/fifo", "a/b", "a/none", "none/f"} {
			if b, _, _, ok := readSmall(dir, nil, name, hide, buf); ok {
				t.Errorf("%s: read %q, want it left to the walk", name, b)
			}
		}
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("readSmall waited (on the FIFO?)")
	}
	for name, want := range map[string]string{"out/j": "journal", "a/b/f.txt": "plain"} {
		if b, _, _, ok := readSmall(dir, nil, name, nil, buf); !ok || string(b) != want {
			t.Errorf("%s with nothing hidden: %q, %v", name, b, ok)
		}
	}
	// Without hide, the directories go unchecked, not unguarded.
	for _, name := range []string{"a/lb/f.txt", "a/b/lf", "top.txt/x", "a/none/f"} {
		if b, _, _, ok := readSmall(dir, nil, name, nil, buf); ok {
			t.Errorf("%s with nothing hidden: read %q, want it left to the walk", name, b)
		}
	}
}

// openFDs counts the process's open descriptors.
func openFDs(t *testing.T) int {
	t.Helper()
	es, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip(err)
	}
	return len(es)
}

// A name dir/file read through the cache of directories is the file dir
// names now: a directory moved away and another made in its place, or
// a link put there, is seen at once; hide is refused every time; what
// the cache holds open is bounded, and closed with it.
func TestDirCache(t *testing.T) {
	d := t.TempDir()
	write := func(name, content string) {
		t.Helper()
		p := filepath.Join(d, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a/f", "one")
	write("elsewhere/f", "link")
	write("out/j", "journal")
	dir, err := os.Open(d)
	if err != nil {
		t.Fatal(err)
	}
	defer dir.Close()
	hide, err := os.Stat(filepath.Join(d, "out"))
	if err != nil {
		t.Fatal(err)
	}
	dirs := newDirCache()
	buf := make([]byte, 64)
	read := func(name string) (string, bool) {
		b, _, _, ok := readSmall(dir, dirs, name, hide, buf)
		return string(b), ok
	}
	for range 2 {
		if got, ok := read("a/f"); !ok || got != "one" {
			t.Fatalf("a/f: %q, %v", got, ok)
		}
		if got, ok := read("out/j"); ok {
			t.Fatalf("out/j, hidden: read %q", got)
		}
	}
	if err := os.Rename(filepath.Join(d, "a"), filepath.Join(d, "a.old")); err != nil {
		t.Fatal(err)
	}
	write("a/f", "two")
	if got, ok := read("a/f"); !ok || got != "two" {
		t.Errorf("a/f after a was replaced: %q, %v; want two", got, ok)
	}
	os.RemoveAll(filepath.Join(d, "a"))
	if err := os.Symlink("elsewhere", filepath.Join(d, "a")); err != nil {
		t.Fatal(err)
	}
	if got, ok := read("a/f"); ok {
		t.Errorf("a/f with a a link: read %q, want it left to the walk", got)
	}
	if err := os.Rename(filepath.Join(d, "out"), filepath.Join(d, "b")); err != nil {
		t.Fatal(err)
	}
	if got, ok := read("b/j"); ok {
		t.Errorf("b/j, hide under another name: read %q", got)
	}

	before := openFDs(t)
	for i := range 3 * dirCacheSize {
		name := fmt.Sprintf("many%d/f", i)
		write(name, name)
		if got, ok := read(name); !ok || got != name {
			t.Fatalf("%s: %q, %v", name, got, ok)
		}
	}
	if n := openFDs(t) - before; n > dirCacheSize {
		t.Errorf("%d more descriptors open after reading %d directories, want at most %d", n, 3*dirCacheSize, dirCacheSize)
	}
	dirs.close()
	if got, ok := read("many0/f"); !ok || got != "many0/f" {
		t.Errorf("after close: %q, %v", got, ok)
	}
	if n := openFDs(t) - before; n > 0 {
		t.Errorf("%d more descriptors open after the cache was closed", n)
	}
}
