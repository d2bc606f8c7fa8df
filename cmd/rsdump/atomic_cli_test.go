package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// `metalink -o` publishes through metalink.WriteFile (internal/atomic): the document can be
// served (mode 0644, where the old copy left CreateTemp's 0600), and a run
// that fails keeps the old document whole and leaves no temporary file.
func TestMetalinkOutputAtomic(t *testing.T) {
	t.Parallel()
	dir := mlTree(t, map[string][]byte{"a": mlRandom(4, 5000)})
	outDir := t.TempDir()
	out := filepath.Join(outDir, "x.meta4")
	code, _, stderr := rsdump(t, "metalink", filepath.Join(dir, "a"), "--mirror", "http://127.0.0.1:1/", "-o", out)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	fi, err := os.Stat(out)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o644 {
		t.Errorf("%s has mode %v, want 0644", out, fi.Mode().Perm())
	}
	old, _ := os.ReadFile(out)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var sout, serr strings.Builder
	if code := run(ctx, []string{"metalink", filepath.Join(dir, "a"), "--mirror", "http://127.0.0.1:1/", "-o", out}, &sout, &serr); code == exitOK {
		t.Fatal("a canceled run succeeded")
	}
	if b, _ := os.ReadFile(out); string(b) != string(old) {
		t.Error("a failed run changed the published document")
	}
	entries, _ := os.ReadDir(outDir)
	for _, e := range entries {
		if e.Name() != "x.meta4" {
			t.Errorf("left behind %s", e.Name())
		}
	}
}
