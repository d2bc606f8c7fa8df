package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	mt "github.com/rsdump/rsdump/internal/mirrortest"
)

// A plain URL with no Digest header gives no hash at all: the file is
// published, but never silently: --json says "unverified", the summary
// line and a warning on stderr say so too.
func TestGetNoHashUnverified(t *testing.T) {
	t.Parallel()
	// A package's first bytes: get refuses a plain URL that is none.
	data := append([]byte("PK\x03\x04"), bytes.Repeat([]byte("no hash here\n"), 5000)...)
	s, _ := mt.Server(bytes.NewReader(data), int64(len(data)), "f.bin")
	t.Cleanup(s.Close)
	out := t.TempDir()
	code, stdout, stderr := rsdump(t, "get", s.URL+"/f.bin", "-o", out, "--json")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if sum := oneGetFile(t, stdout); !sum.Unverified || !strings.Contains(stdout, `"unverified": 1`) {
		t.Errorf("--json does not say the file is unverified: %s", stdout)
	}
	if got, _ := os.ReadFile(filepath.Join(out, "f.bin")); !bytes.Equal(got, data) {
		t.Error("wrong content")
	}
	out = t.TempDir()
	code, stdout, stderr = rsdump(t, "get", s.URL+"/f.bin", "-o", out)
	if code != exitOK || !strings.Contains(stdout, "UNVERIFIED") || !strings.Contains(stderr, "warning: f.bin: the source gives no hash") {
		t.Errorf("exit %d; summary %q and stderr %q do not say the file is unverified", code, stdout, stderr)
	}
}

// A symbolic link in the output directory that leads out of it is named
// in the error, and nothing is written through it.
func TestGetSymlinkOutRefused(t *testing.T) {
	t.Parallel()
	_, meta, _ := getFixture(t, 256<<10, 32<<20)
	out, elsewhere := t.TempDir(), t.TempDir()
	victim := filepath.Join(elsewhere, "victim")
	os.WriteFile(victim, []byte("precious"), 0o644)
	if err := os.Symlink(victim, filepath.Join(out, "pkg.zip.part")); err != nil {
		t.Skip("no symbolic links:", err)
	}
	code, _, stderr := rsdump(t, "get", meta, "-o", out)
	if code != exitFailed || !strings.Contains(stderr, filepath.Join(out, "pkg.zip.part")) {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
	if got, _ := os.ReadFile(victim); string(got) != "precious" {
		t.Error("the link's target was overwritten")
	}
}
