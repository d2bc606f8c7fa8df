package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rsdump/rsdump/internal/verifytest"
	"github.com/rsdump/rsdump/layout"
	"github.com/rsdump/rsdump/resourcesync"
)

// srcTree is a Source tree that a test changes generation by generation,
// each change with an mtime inside the generation's interval.
type srcTree struct {
	t   *testing.T
	dir string
	now time.Time // the mtime changes get
}

func (s *srcTree) write(rel, data string) {
	s.t.Helper()
	p := filepath.Join(s.dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		s.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		s.t.Fatal(err)
	}
	if err := os.Chtimes(p, s.now, s.now); err != nil {
		s.t.Fatal(err)
	}
}

func (s *srcTree) remove(rel string) {
	s.t.Helper()
	if err := os.Remove(filepath.Join(s.dir, filepath.FromSlash(rel))); err != nil {
		s.t.Fatal(err)
	}
}

// rename moves a file as mv does: it keeps its mtime, older than the
// generation.
func (s *srcTree) rename(from, to string) {
	s.t.Helper()
	p := filepath.Join(s.dir, filepath.FromSlash(to))
	os.MkdirAll(filepath.Dir(p), 0o755)
	if err := os.Rename(filepath.Join(s.dir, filepath.FromSlash(from)), p); err != nil {
		s.t.Fatal(err)
	}
}

// treeFiles returns every regular file under dir but rsdump's state, as
// content and permission bits.
func treeFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	return regularFiles(verifytest.ReadTreeFiles(t, dir))
}

// regularFiles is a tree's regular files, each as its permission bits
// and content.
func regularFiles(tree map[string]verifytest.TreeFile) map[string]string {
	out := map[string]string{}
	for rel, f := range tree {
		if f.Mode.IsRegular() {
			out[rel] = f.Mode.Perm().String() + " " + f.Data
		}
	}
	return out
}

// sameTree fails unless dst holds exactly src's files, byte for byte.
func sameTree(t *testing.T, what, src, dst string) {
	t.Helper()
	verifytest.SameFiles(t, what, treeFiles(t, dst), treeFiles(t, src))
}

func rsdumpOK(t *testing.T, args ...string) string {
	t.Helper()
	code, stdout, stderr := rsdump(t, args...)
	if code != exitOK {
		t.Fatalf("rsdump %s: exit %d\n%s%s", strings.Join(args, " "), code, stdout, stderr)
	}
	return stdout + stderr
}

// The srcGenerations of the Source: creations, updates, deletions, a rename,
// a file updated in two successive packs of one Change Dump, a file
// deleted then recreated, names with spaces and Unicode.
var srcGenerations = []func(s *srcTree){
	func(s *srcTree) {
		s.write("a.txt", "a, second version\n")
		s.write("dir one/ñame with space.txt", "created in generation 1\n")
		s.write("new/deep/x.bin", strings.Repeat("x", 70000))
		s.remove("gone.txt")
		s.rename("old/name.txt", "renamed/näme.txt")
		s.write("twice.txt", "t1")
	},
	func(s *srcTree) {
		s.write("twice.txt", "t2") // same length, a later mtime
		s.remove("back.txt")
		s.write("dir one/ñame with space.txt", "updated in generation 2\n")
	},
	func(s *srcTree) {
		s.write("back.txt", "recreated, different\n")
		s.remove("dir one/ñame with space.txt")
		s.write("日本/ファイル.txt", "unicode\n")
	},
	func(s *srcTree) {}, // nothing changes
}

// TestChangesEndToEnd: a Source evolves through srcGenerations; after each,
// pack --changes, then unpack the Change Dump into the Destination
// restored from the initial dump, and into a new one from the pack output
// directory (Resource Dump, then every change); both equal the Source
// byte for byte, verify --tree finds them equal to the Resource List, and
// a second unpack changes nothing.
func TestChangesEndToEnd(t *testing.T) {
	t.Parallel()
	s := &srcTree{t: t, dir: t.TempDir(), now: verifytest.Time.Add(-time.Hour)}
	for rel, data := range map[string]string{"a.txt": "a\n", "gone.txt": "gone\n", "old/name.txt": "moved later\n",
		"twice.txt": "t0", "back.txt": "back\n", "keep/k.txt": "unchanged\n", "sp ace/ü.txt": "unicode\n"} {
		s.write(rel, data)
	}
	out, dst := t.TempDir(), t.TempDir()
	base := []string{"--base-url", verifytest.BaseURL}
	hour := func(i int) string { return resourcesync.FormatTime(verifytest.Time.Add(time.Duration(i) * time.Hour)) }
	rsdumpOK(t, append([]string{"pack", s.dir, "-o", out, "-q", "--at", hour(0)}, base...)...)
	rsdumpOK(t, append([]string{"unpack", filepath.Join(out, layout.DumpName), "--dest", dst}, base...)...)
	sameTree(t, "baseline", s.dir, dst)

	for i, g := range srcGenerations {
		s.now = verifytest.Time.Add(time.Duration(i)*time.Hour + 30*time.Minute)
		g(s)
		rsdumpOK(t, append([]string{"pack", "--changes", s.dir, "-o", out, "-q", "--at", hour(i + 1)}, base...)...)
		what := "generation " + strconv.Itoa(i+1)
		rsdumpOK(t, append([]string{"unpack", filepath.Join(out, "changedump.xml"), "--dest", dst}, base...)...)
		sameTree(t, what, s.dir, dst)
		rsdumpOK(t, append([]string{"verify", "--tree", dst, "--against", filepath.Join(out, "resourcelist.xml")}, base...)...)

		fresh := t.TempDir()
		rsdumpOK(t, append([]string{"unpack", out, "--dest", fresh}, base...)...)
		sameTree(t, what+", from the pack output directory", s.dir, fresh)

		again := rsdumpOK(t, append([]string{"unpack", filepath.Join(out, "changedump.xml"), "--dest", dst}, base...)...)
		if !strings.Contains(again, "0 packages: 0 files written (0 B), 0 already present, 0 deleted, 0 refused") {
			t.Errorf("%s: a second unpack did something:\n%s", what, again)
		}
	}
	if _, err := os.Stat(filepath.Join(dst, "dir one")); err == nil {
		t.Errorf("dir one, emptied at the Source, is still at the Destination")
	}
}
