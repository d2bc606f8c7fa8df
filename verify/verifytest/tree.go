package verifytest

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// WriteFiles writes files (slash-separated relative path → content) under
// dir, every one with mtime Time: manifests carry mtimes, so tests pin them.
func WriteFiles(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for rel, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, Time, Time); err != nil {
			t.Fatal(err)
		}
	}
}

// Tree writes files under a new temporary directory and returns it.
func Tree(t testing.TB, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	WriteFiles(t, dir, files)
	return dir
}

// ExampleFiles reads the bundled example tree, testdata/example. Git keeps
// no mtimes, so tests write it out again with Tree.
func ExampleFiles(t testing.TB) map[string]string {
	t.Helper()
	_, here, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(here), "..", "..", "testdata", "example")
	files := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(root, p)
		files[filepath.ToSlash(rel)] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}
