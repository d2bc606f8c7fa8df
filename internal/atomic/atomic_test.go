package atomic

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
)

// leftovers lists the temporary files in dir.
func leftovers(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".tmp") {
			out = append(out, e.Name())
		}
	}
	return out
}

func TestWriteFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := filepath.Join(dir, "a.json")
	for _, content := range []string{"first", "second, longer"} {
		if err := WriteFile(p, []byte(content), 0o640); err != nil {
			t.Fatal(err)
		}
		if b, _ := os.ReadFile(p); string(b) != content {
			t.Errorf("content %q, want %q", b, content)
		}
	}
	if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o640 {
		t.Errorf("mode %v, want 0640", fi.Mode().Perm())
	}
	if l := leftovers(t, dir); l != nil {
		t.Errorf("temporary files left: %v", l)
	}
}

// A writer that fails half-way leaves the old file whole and no
// temporary file behind.
func TestAbortKeepsOldContent(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := filepath.Join(dir, "pkg.zip")
	os.WriteFile(p, []byte("old and complete"), 0o644)
	f, err := Create(p, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(filepath.Base(f.TempName()), ".pkg.zip.") || filepath.Dir(f.TempName()) != dir {
		t.Errorf("temporary name %s is not .pkg.zip.*.tmp beside the file", f.TempName())
	}
	f.Write([]byte("partial"))
	f.Abort()
	f.Abort() // harmless twice
	if b, _ := os.ReadFile(p); string(b) != "old and complete" {
		t.Errorf("final file now holds %q", b)
	}
	if l := leftovers(t, dir); l != nil {
		t.Errorf("temporary files left: %v", l)
	}
	if err := f.Commit(); err == nil {
		t.Error("Commit after Abort succeeded")
	}
	if b, _ := os.ReadFile(p); string(b) != "old and complete" {
		t.Errorf("Commit after Abort replaced the file with %q", b)
	}
}

// A failing rename (the final name is a non-empty directory) is reported,
// and the temporary file goes.
func TestCommitFailureRemovesTemp(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := filepath.Join(dir, "out")
	os.MkdirAll(filepath.Join(p, "child"), 0o755)
	err := WriteFile(p, []byte("data"), 0o644)
	if err == nil || !strings.Contains(err.Error(), p) {
		t.Fatalf("WriteFile over a directory = %v, want an error naming %s", err, p)
	}
	if l := leftovers(t, dir); l != nil {
		t.Errorf("temporary files left: %v", l)
	}
	// A write into a directory that does not exist fails before any file.
	if err := WriteFile(filepath.Join(dir, "no", "such"), nil, 0o644); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("WriteFile into a missing directory = %v", err)
	}
}

// The same writer works inside an *os.Root, with slash paths.
func TestInRoot(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	os.Mkdir(filepath.Join(dir, "sub"), 0o755)
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	if err := WriteFileIn(root, "sub/state.json", []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "sub", "state.json")); string(b) != "{}\n" {
		t.Errorf("content %q", b)
	}
	if l := leftovers(t, filepath.Join(dir, "sub")); l != nil {
		t.Errorf("temporary files left: %v", l)
	}
	if err := WriteFileIn(root, "../escape", []byte("x"), 0o644); err == nil {
		t.Error("a name leaving the root was written")
	}
	f, err := CreateIn(root, "sub/big", 0o644)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("half"))
	f.Abort()
	if _, err := os.Stat(filepath.Join(dir, "sub", "big")); err == nil {
		t.Error("an aborted file got its final name")
	}
	if l := leftovers(t, filepath.Join(dir, "sub")); l != nil {
		t.Errorf("temporary files left: %v", l)
	}
}

func TestPublish(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	part := filepath.Join(dir, "f.part")
	f, _ := os.Create(part)
	f.Write([]byte("done"))
	if err := Publish(f, part, filepath.Join(dir, "f")); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "f")); string(b) != "done" {
		t.Errorf("content %q", b)
	}
	// A failed rename keeps the part for a later run.
	part2 := filepath.Join(dir, "g.part")
	g, _ := os.Create(part2)
	os.MkdirAll(filepath.Join(dir, "g", "x"), 0o755)
	if err := Publish(g, part2, filepath.Join(dir, "g")); err == nil {
		t.Error("Publish over a directory succeeded")
	}
	if _, err := os.Stat(part2); err != nil {
		t.Errorf("the part went: %v", err)
	}
}

// What a killed process left at CreateVia's fixed temporary name is
// replaced, never written through: a symbolic link there leaves its
// target as it was.
func TestViaDoesNotFollowLink(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	victim := filepath.Join(t.TempDir(), "victim")
	os.WriteFile(victim, []byte("precious"), 0o644)
	if err := os.Symlink(victim, filepath.Join(dir, "state.tmp")); err != nil {
		t.Skip("no symbolic links:", err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	for _, fsys := range []FS{root, OS} {
		tmp, name := "state.tmp", "state"
		if fsys == OS {
			tmp, name = filepath.Join(dir, tmp), filepath.Join(dir, name)
			os.Symlink(victim, tmp)
		}
		if err := WriteFileVia(fsys, tmp, name, []byte("{}"), 0o644); err != nil {
			t.Fatal(err)
		}
		if b, _ := os.ReadFile(victim); string(b) != "precious" {
			t.Fatalf("the link's target became %q", b)
		}
		if b, _ := os.ReadFile(filepath.Join(dir, "state")); string(b) != "{}" {
			t.Errorf("content %q", b)
		}
	}
}

func TestPublishIn(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	f, _ := root.Create("f.part")
	f.Write([]byte("done"))
	if err := PublishIn(root, f, "f.part", "f"); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "f")); string(b) != "done" {
		t.Errorf("content %q", b)
	}
}

// Of writers racing to WriteNew one name, exactly one wins; the others
// get fs.ErrExist, the name holds the winner's whole content, and no
// temporary file is left.
func TestWriteNewOneWinner(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	name := filepath.Join(dir, "claim")
	const writers = 16
	errs := make(chan error, writers)
	var wg sync.WaitGroup
	for i := range writers {
		wg.Go(func() { errs <- WriteNew(name, []byte(fmt.Sprintf("writer %02d", i)), 0o644) })
	}
	wg.Wait()
	close(errs)
	won := 0
	for err := range errs {
		switch {
		case err == nil:
			won++
		case !errors.Is(err, fs.ErrExist):
			t.Errorf("a loser's error: %v, want fs.ErrExist", err)
		}
	}
	b, _ := os.ReadFile(name)
	if won != 1 || !regexp.MustCompile(`^writer \d\d$`).Match(b) {
		t.Errorf("%d winners, content %q", won, b)
	}
	if es, _ := os.ReadDir(dir); len(es) != 1 {
		t.Errorf("left in the directory: %v", es)
	}
}
