package unpack_test

import (
	"bytes"
	"encoding/binary"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/rsdump/rsdump/layout"
	"github.com/rsdump/rsdump/pack"
	"github.com/rsdump/rsdump/unpack"
)

// modeTree writes files with the given permission bits.
func modeTree(t *testing.T, modes map[string]fs.FileMode) string {
	t.Helper()
	files := map[string]string{}
	for name := range modes {
		files[name] = "content of " + name + "\n"
	}
	src := tree(t, files)
	for name, m := range modes {
		if err := os.Chmod(filepath.Join(src, name), m); err != nil {
			t.Fatal(err)
		}
	}
	return src
}

func perm(t *testing.T, path string) fs.FileMode {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}

// TestPermissionsRestored: the permission bits a package records come
// back at unpack (an executable stays executable, a private file stays
// private), also on a re-run over files whose content is right but whose
// mode was changed.
func TestPermissionsRestored(t *testing.T) {
	t.Parallel()
	modes := map[string]fs.FileMode{"run.sh": 0o755, "bin/tool": 0o750, "secret.txt": 0o600, "plain.txt": 0o644, "ro.txt": 0o444}
	out := packDir(t, modeTree(t, modes), pack.Options{})
	dst := t.TempDir()
	res, fs := run(t, filepath.Join(out, layout.DumpName), dst, unpack.Options{})
	if res.Problems() != 0 || res.Written != len(modes) {
		t.Fatalf("%+v\n%s", res, dump(fs))
	}
	for name, want := range modes {
		if got := perm(t, filepath.Join(dst, name)); got != want {
			t.Errorf("%s: mode %v, want %v", name, got, want)
		}
	}
	os.Chmod(filepath.Join(dst, "run.sh"), 0o644)
	res, fs = run(t, filepath.Join(out, layout.DumpName), dst, unpack.Options{})
	if res.Present != len(modes) || res.Problems() != 0 {
		t.Fatalf("second run: %+v\n%s", res, dump(fs))
	}
	if got := perm(t, filepath.Join(dst, "run.sh")); got != 0o755 {
		t.Errorf("re-run left run.sh at %v, want -rwxr-xr-x", got)
	}
}

// TestPermissionsUnderUmask: each file gets the bits its entry records
// whatever the umask of the unpacking process. unpack creates staged files
// as 0644 less the umask and skips the chmod when that is already the
// recorded mode; a umask it misread would leave plain.txt at 0600 under
// 077, or run.sh at 0644.
func TestPermissionsUnderUmask(t *testing.T) {
	if testing.Short() {
		t.Skip("subprocess test skipped with -short")
	}
	modes := map[string]fs.FileMode{"run.sh": 0o755, "secret.txt": 0o600, "plain.txt": 0o644, "group.txt": 0o664}
	doc := filepath.Join(packDir(t, modeTree(t, modes), pack.Options{}), layout.DumpName)
	for _, mask := range []string{"077", "000", "022", "002"} {
		dst := t.TempDir()
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), "RSDUMP_KILL_CHILD=1", "RSDUMP_UMASK="+mask, "RSDUMP_SRC="+doc, "RSDUMP_DST="+dst)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("umask %s: %v\n%s", mask, err, out)
		}
		for name, want := range modes {
			if got := perm(t, filepath.Join(dst, name)); got != want {
				t.Errorf("umask %s: %s: mode %v, want %v", mask, name, got, want)
			}
		}
	}
}

// setAttrs rewrites the central directory record of one entry: its
// creator (the high byte of "version made by") and external attributes.
func setAttrs(t *testing.T, zip []byte, name string, creator byte, attrs uint32) []byte {
	t.Helper()
	sig := []byte{'P', 'K', 1, 2}
	for i := bytes.Index(zip, sig); i >= 0; {
		n := int(binary.LittleEndian.Uint16(zip[i+28:]))
		if string(zip[i+46:i+46+n]) == name {
			zip[i+5] = creator
			binary.LittleEndian.PutUint32(zip[i+38:], attrs)
			return zip
		}
		j := bytes.Index(zip[i+4:], sig)
		if j < 0 {
			break
		}
		i += 4 + j
	}
	t.Fatalf("no central directory record for %s", name)
	return nil
}

// TestPermissionsFiltered: setuid, setgid and sticky bits in a package are
// never applied, and an entry whose creator is not Unix gets the default
// mode, as a file unpack creates always did.
func TestPermissionsFiltered(t *testing.T) {
	t.Parallel()
	out := packDir(t, modeTree(t, map[string]fs.FileMode{"suid": 0o755, "dos.txt": 0o700}), pack.Options{})
	zp := filepath.Join(out, "resourcedump-00001.zip")
	z, _ := os.ReadFile(zp)
	z = setAttrs(t, z, "resources/suid", 3, (0o100000|0o4000|0o2000|0o1000|0o775)<<16)
	z = setAttrs(t, z, "resources/dos.txt", 0, 0x20) // MS-DOS, archive bit
	os.WriteFile(zp, z, 0o644)
	dst := t.TempDir()
	res, finds := run(t, zp, dst, unpack.Options{})
	if res.Problems() != 0 || res.Written != 2 {
		t.Fatalf("%+v\n%s", res, dump(finds))
	}
	if got := perm(t, filepath.Join(dst, "suid")); got != 0o775 {
		t.Errorf("suid: permissions %v, want -rwxrwxr-x", got)
	}
	if fi, _ := os.Stat(filepath.Join(dst, "suid")); fi.Mode()&(fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky) != 0 {
		t.Errorf("suid: mode %v carries setuid, setgid or sticky", fi.Mode())
	}
	ref := filepath.Join(t.TempDir(), "ref")
	os.WriteFile(ref, nil, 0o644) // the default, under this process's umask
	if got, want := perm(t, filepath.Join(dst, "dos.txt")), perm(t, ref); got != want {
		t.Errorf("dos.txt: mode %v, want the default %v", got, want)
	}
}
