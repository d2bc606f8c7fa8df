//go:build linux

package serve

import (
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
		b, size, mtime, ok := readSmall(dir, name, hide, buf)
		fi, _ := os.Stat(filepath.Join(d, name))
		if !ok || string(b) != want || size != int64(len(want)) || !mtime.Equal(fi.ModTime()) {
			t.Errorf("%s: %q, %d, %v, %v", name, b, size, mtime, ok)
		}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for _, name := range []string{"a/big.bin", "out/j", "a/lb/f.txt", "a/b/lf", "a/fifo", "a/b", "a/none", "none/f"} {
			if b, _, _, ok := readSmall(dir, name, hide, buf); ok {
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
		if b, _, _, ok := readSmall(dir, name, nil, buf); !ok || string(b) != want {
			t.Errorf("%s with nothing hidden: %q, %v", name, b, ok)
		}
	}
	// Without hide, the directories go unchecked, not unguarded.
	for _, name := range []string{"a/lb/f.txt", "a/b/lf", "top.txt/x", "a/none/f"} {
		if b, _, _, ok := readSmall(dir, name, nil, buf); ok {
			t.Errorf("%s with nothing hidden: read %q, want it left to the walk", name, b)
		}
	}
}
