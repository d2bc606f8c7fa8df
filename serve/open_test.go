//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package serve

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// A regular file replaced between the check and the open: by a FIFO, the
// open does not wait for a writer; by a link, what it leads to is not
// served. Both are refused at once.
func TestOpenFileReplaced(t *testing.T) {
	t.Parallel()
	d := t.TempDir()
	p := filepath.Join(d, "f")
	os.WriteFile(p, []byte("checked"), 0o644)
	os.WriteFile(filepath.Join(d, "other"), []byte("other"), 0o644)
	root, err := os.OpenRoot(d)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	fi, err := root.Lstat("f")
	if err != nil {
		t.Fatal(err)
	}
	os.Remove(p)
	if err := syscall.Mkfifo(p, 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		f, _, err := openFile(root, "f", fi)
		if f != nil {
			f.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, errNotRegular) {
			t.Errorf("a FIFO in the checked file's place: %v", err)
		}
	case <-time.After(2 * time.Second):
		if w, err := os.OpenFile(p, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			w.Close() // lets the open go
		}
		<-done
		t.Fatal("the open waited for a writer to the FIFO")
	}
	os.Remove(p)
	os.Symlink("other", p)
	if f, _, err := openFile(root, "f", fi); err == nil {
		f.Close()
		t.Error("a link in the checked file's place was followed")
	}
}
