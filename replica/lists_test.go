package replica_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"testing"

	"github.com/rsdump/rsdump/replica"
	"github.com/rsdump/rsdump/verify"
)

// TestFailedResourceLeavesNoDirectory: a resource that 404s, or whose
// bytes fail their hash, leaves no directory behind in the tree, also
// where it shares a new directory with a resource that lands (which
// moves that directory into the tree whole).
func TestFailedResourceLeavesNoDirectory(t *testing.T) {
	s := newSource(t, map[string]string{
		"a/ok.txt":         "lands",
		"a/b/gone.txt":     "404",
		"a/c/d/bad.txt":    "fails its hash",
		"e/f/only-one.txt": "404 alone",
	})
	s.publishResources()
	res := filepath.Join(s.out, "res")
	os.Remove(filepath.Join(res, "a", "b", "gone.txt"))
	os.Remove(filepath.Join(res, "e", "f", "only-one.txt"))
	os.WriteFile(filepath.Join(res, "a", "c", "d", "bad.txt"), []byte("fails its HASH"), 0o644)
	dst := t.TempDir()
	r, fs, _ := syncRun(t, s.srv.URL+"/resourcelist.xml", dst, replica.Options{})
	if r.Written != 1 || r.Refused != 3 || !hasFinding(fs, verify.Error, verify.CheckHash) {
		t.Fatalf("%+v\n%s", r, problems(fs))
	}
	if got, want := dirsUnder(t, dst), []string{"a"}; !slices.Equal(got, want) {
		t.Errorf("directories in the tree: %v, want %v", got, want)
	}
}

// dirsUnder lists the directories under dir but rsdump's own.
func dirsUnder(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		switch {
		case !d.IsDir() || rel == ".":
		case rel == verify.StateDir:
			return filepath.SkipDir
		default:
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}
