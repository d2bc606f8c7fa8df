package pack

import (
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestModesRecorded: each entry records its file's permission bits as a
// Unix mode (creator Unix, mode in the upper 16 bits of the external
// attributes), so Info-ZIP unzip restores an executable as executable;
// the same input gives the same package, and a changed mode a different
// one.
func TestModesRecorded(t *testing.T) {
	t.Parallel()
	src := tree(t, map[string]string{"run.sh": "#!/bin/sh\n", "data.txt": "data"})
	os.Chmod(filepath.Join(src, "run.sh"), 0o755)
	os.Chmod(filepath.Join(src, "data.txt"), 0o640)
	res, out := mustPack(t, src, testOptions())
	zp := filepath.Join(out, res.Packages[0].Name)
	zr, err := openZip(zp)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]fs.FileMode{"resources/run.sh": 0o755, "resources/data.txt": 0o640, "manifest.xml": 0o644}
	for _, f := range zr.File {
		if f.CreatorVersion>>8 != 3 || f.Mode() != want[f.Name] || f.ExternalAttrs>>16 != uint32(0o100000|want[f.Name]) {
			t.Errorf("%s: creator %d, mode %v (attrs %#x), want Unix %v", f.Name, f.CreatorVersion>>8, f.Mode(), f.ExternalAttrs, want[f.Name])
		}
	}
	zr.Close()
	_, again := mustPack(t, src, testOptions())
	if !bytes.Equal(readFile(t, zp), readFile(t, filepath.Join(again, res.Packages[0].Name))) {
		t.Error("the same input and --at gave a different package")
	}
	os.Chmod(filepath.Join(src, "data.txt"), 0o644)
	_, changed := mustPack(t, src, testOptions())
	if bytes.Equal(readFile(t, zp), readFile(t, filepath.Join(changed, res.Packages[0].Name))) {
		t.Error("a changed mode gave the same package")
	}
	if _, err := exec.LookPath("unzip"); err != nil {
		t.Skip("unzip not installed: restore check skipped")
	}
	dst := t.TempDir()
	if b, err := exec.Command("unzip", "-q", zp, "-d", dst).CombinedOutput(); err != nil {
		t.Fatalf("unzip: %v\n%s", err, b)
	}
	if fi, err := os.Stat(filepath.Join(dst, "resources", "run.sh")); err != nil {
		t.Error(err)
	} else if fi.Mode().Perm()&0o111 == 0 {
		t.Errorf("unzip did not restore run.sh as executable: %v", fi.Mode())
	}
}
