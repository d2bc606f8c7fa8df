package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rsdump/rsdump/deststate"
	"github.com/rsdump/rsdump/layout"
)

// relTo is p relative to the test's working directory: a path as a user
// types it.
func relTo(t *testing.T, p string) string {
	t.Helper()
	wd, _ := os.Getwd()
	rel, err := filepath.Rel(wd, p)
	if err != nil {
		t.Fatal(err)
	}
	return rel
}

// TestMessages: what a user is told names what to do and where, by
// absolute paths, in counts that agree in number.
func TestMessages(t *testing.T) {
	t.Parallel()
	src := t.TempDir()
	os.WriteFile(filepath.Join(src, "only.txt"), []byte("one file\n"), 0o644)
	out := t.TempDir()
	base := "http://127.0.0.1/rs/"

	// pack --changes with no earlier pack says to pack first or give --since.
	code, _, stderr := rsdump(t, "pack", "--changes", relTo(t, src), "-o", relTo(t, out), "--base-url", base, "-q")
	if code == exitOK || !strings.Contains(stderr, "rsdump pack SRC -o "+out+" first") || !strings.Contains(stderr, "--since") {
		t.Errorf("pack --changes with no state: exit %d\n%s", code, stderr)
	}

	rsdumpOK(t, "pack", relTo(t, src), "-o", relTo(t, out), "--base-url", base, "-q")
	dst := t.TempDir()
	doc := relTo(t, filepath.Join(out, layout.DumpName))
	code, stdout, _ := rsdump(t, "unpack", doc, "--dest", relTo(t, dst), "--base-url", base)
	if code != exitOK || !strings.HasPrefix(stdout, "1 package: 1 file written") || !strings.Contains(stdout, "0 errors") {
		t.Errorf("unpack summary: exit %d: %s", code, stdout)
	}

	// A tree a sync holds says so; the tree is named by its absolute path.
	d, err := deststate.Open(dst, deststate.Options{Command: "sync"})
	if err != nil {
		t.Fatal(err)
	}
	code, _, stderr = rsdump(t, "unpack", doc, "--dest", relTo(t, dst), "--base-url", base)
	d.Close()
	if code == exitOK || !strings.Contains(stderr, dst+": the tree is in use by rsdump sync, pid ") {
		t.Errorf("unpack into a tree sync holds: exit %d\n%s", code, stderr)
	}

	// A problem names the package by its absolute path.
	os.WriteFile(filepath.Join(dst, "only.txt"), []byte("changed by hand\n"), 0o644)
	other := t.TempDir()
	os.WriteFile(filepath.Join(other, "only.txt"), []byte("mine\n"), 0o644)
	code, _, stderr = rsdump(t, "unpack", doc, "--dest", relTo(t, other), "--base-url", base, "--adopt")
	if code == exitOK || !strings.Contains(stderr, filepath.Join(out, "resourcedump-00001.zip")) {
		t.Errorf("a refused file: exit %d\n%s", code, stderr)
	}
}
