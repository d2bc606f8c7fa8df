package main

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"testing"

	"github.com/rsdump/rsdump/layout"
)

// TestGetDumpIsALocalCopy: get of a dump saves, beside the packages and
// under the same names, the dump document, the detached manifests and the
// Metalinks, byte for byte, so that verify DIR and unpack DIR take the
// download as they take what was published. The packages' <loc> host is
// down: everything comes from the second mirror.
func TestGetDumpIsALocalCopy(t *testing.T) {
	t.Parallel()
	out := t.TempDir()
	srv := httptest.NewServer(http.FileServer(http.Dir(out)))
	defer srv.Close()
	dead := deadURL(t)
	files := map[string][]byte{"a.txt": []byte("alpha\n"), "b.bin": mlRandom(7, 300000), "c.bin": mlRandom(8, 200000)}
	src := mlTree(t, files)
	base := "http://127.0.0.9/rs/"
	if code, _, stderr := rsdump(t, "pack", src, "--base-url", base, "-o", out, "--metalink", "--max-package-size", "256K",
		"--dump-url", dead+"/rs/", "--mirror", srv.URL+"/"); code != exitOK {
		t.Fatalf("pack: exit %d: %s", code, stderr)
	}
	dl := t.TempDir()
	if code, _, stderr := rsdump(t, "get", srv.URL+"/resourcedump.xml", "-o", dl, "--quiet"); code != exitOK {
		t.Fatalf("get: exit %d: %s", code, stderr)
	}
	// The lists and the Capability List are the Source's, not the dump's:
	// get of the dump does not fetch them.
	published := slices.DeleteFunc(listFiles(t, out), func(n string) bool {
		return n == layout.ResourceListName || n == layout.CapabilityListName
	})
	copied := listFiles(t, dl)
	if len(published) < 7 || !equalStrings(published, copied) {
		t.Fatalf("published %v\ndownloaded %v", published, copied)
	}
	for _, name := range published {
		a, _ := os.ReadFile(filepath.Join(out, name))
		b, _ := os.ReadFile(filepath.Join(dl, name))
		if !bytes.Equal(a, b) {
			t.Errorf("%s differs from what was published", name)
		}
	}
	if code, stdout, stderr := rsdump(t, "verify", dl); code != exitOK {
		t.Errorf("verify of the download: exit %d\n%s%s", code, stdout, stderr)
	}
	dest := t.TempDir()
	if code, stdout, stderr := rsdump(t, "unpack", dl, "--dest", dest, "--base-url", base); code != exitOK {
		t.Fatalf("unpack of the download: exit %d\n%s%s", code, stdout, stderr)
	}
	for rel, data := range files {
		if got, err := os.ReadFile(filepath.Join(dest, rel)); err != nil || !bytes.Equal(got, data) {
			t.Errorf("%s: %v", rel, err)
		}
	}
}

// listFiles lists the regular files at the top of dir, hidden ones left
// out.
func listFiles(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		if e.Type().IsRegular() && e.Name()[0] != '.' {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	return names
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
