package verifytest

import (
	"context"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rsdump/rsdump/deststate"
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

// TreeFile is what ReadTreeFiles found at a path.
type TreeFile struct {
	Data    string      // the content, through a symbolic link
	Mode    fs.FileMode // of the entry itself, not of a link's target
	ModTime time.Time
}

// ReadTreeFiles returns every entry under dir but directories, by
// slash-separated relative path, leaving out rsdump's state directory
// (deststate.DirName) at dir's top. A symbolic link is listed with its
// target's content, or none when the target is unreadable.
func ReadTreeFiles(t testing.TB, dir string) map[string]TreeFile {
	t.Helper()
	out, err := TryReadTreeFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TryReadTreeFiles is ReadTreeFiles for a tree another process may be
// changing (a follower's sync): a file that vanishes mid-walk is an
// error to look again after, not a failed test.
func TryReadTreeFiles(dir string) (map[string]TreeFile, error) {
	out := map[string]TreeFile{}
	err := deststate.WalkTree(context.Background(), dir, func(rel string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		p := filepath.Join(dir, filepath.FromSlash(rel))
		fi, err := d.Info()
		if err != nil {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil && fi.Mode().IsRegular() {
			return err
		}
		out[rel] = TreeFile{Data: string(b), Mode: fi.Mode(), ModTime: fi.ModTime()}
		return nil
	})
	return out, err
}

// ReadTree is the regular files of ReadTreeFiles: path → content.
func ReadTree(t testing.TB, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for rel, f := range ReadTreeFiles(t, dir) {
		if f.Mode.IsRegular() {
			out[rel] = f.Data
		}
	}
	return out
}

// ReadTreeStat is ReadTreeFiles as path → "content@mtime mode", the
// mtime in UTC RFC 3339 with nanoseconds: one string to compare holds
// all three. Contents takes the contents back.
func ReadTreeStat(t testing.TB, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for rel, f := range ReadTreeFiles(t, dir) {
		out[rel] = f.Data + "@" + f.ModTime.UTC().Format(time.RFC3339Nano) + " " + f.Mode.String()
	}
	return out
}

// Contents drops the mtimes and modes ReadTreeStat adds.
func Contents(m map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		out[k] = v[:strings.LastIndex(v, "@")]
	}
	return out
}

// SameFiles fails t unless got holds exactly the paths of want, each with
// want's content; what names the tree in the messages.
func SameFiles(t testing.TB, what string, got, want map[string]string) {
	t.Helper()
	for _, k := range slices.Sorted(maps.Keys(want)) {
		if g, ok := got[k]; !ok {
			t.Errorf("%s: %s missing", what, k)
		} else if g != want[k] {
			t.Errorf("%s: %s = %.60q, want %.60q", what, k, g, want[k])
		}
	}
	for _, k := range slices.Sorted(maps.Keys(got)) {
		if _, ok := want[k]; !ok {
			t.Errorf("%s: %s should not be there", what, k)
		}
	}
}
