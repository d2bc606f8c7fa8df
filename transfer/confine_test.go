package transfer

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A directory of the output tree that is a symbolic link to elsewhere is
// not followed: the file is refused, naming the link, and nothing is
// written outside the tree.
func TestGetSymlinkedSubdirRefused(t *testing.T) {
	t.Parallel()
	data := payload(200<<10, 60)
	s, m := serve(t, data)
	dir, outside := t.TempDir(), t.TempDir()
	if err := os.Symlink(outside, filepath.Join(dir, "sub")); err != nil {
		t.Skip("no symbolic links:", err)
	}
	_, err := get(t, fastOptions(), dir, fileFor("sub/x.bin", data, plen, s.URL))
	if err == nil || !errors.Is(err, ErrSymlink) || !strings.Contains(err.Error(), filepath.Join(dir, "sub")) {
		t.Errorf("error %v, want one naming the link %s", err, filepath.Join(dir, "sub"))
	}
	if ents, _ := os.ReadDir(outside); len(ents) > 0 {
		t.Errorf("%d files written outside the output directory, %s first", len(ents), ents[0].Name())
	}
	if m.Requests.Load() != 0 {
		t.Errorf("%d requests for a file that cannot be written", m.Requests.Load())
	}
}

// A working file (.part, the state or its temporary file) or the final
// name that is a symbolic link is never written through, whether it
// leads outside the tree or to another file in it.
func TestGetSymlinkedWorkFilesRefused(t *testing.T) {
	t.Parallel()
	data := payload(200<<10, 61)
	s, _ := serve(t, data)
	for _, suffix := range []string{"", partSuffix, stateSuffix, stateSuffix + tmpSuffix} {
		for _, inside := range []bool{false, true} {
			dir := t.TempDir()
			victim := filepath.Join(t.TempDir(), "victim")
			if inside {
				victim = filepath.Join(dir, "victim")
			}
			precious := bytes.Repeat([]byte("precious "), len(data)/9+1)[:len(data)]
			os.WriteFile(victim, precious, 0o644)
			link := filepath.Join(dir, "x.bin"+suffix)
			if err := os.Symlink(victim, link); err != nil {
				t.Skip("no symbolic links:", err)
			}
			_, err := get(t, fastOptions(), dir, fileFor("x.bin", data, plen, s.URL))
			if err == nil || !errors.Is(err, ErrSymlink) || !strings.Contains(err.Error(), link) {
				t.Errorf("x.bin%s (inside %v): error %v, want one naming %s", suffix, inside, err, link)
			}
			if got, _ := os.ReadFile(victim); !bytes.Equal(got, precious) {
				t.Errorf("x.bin%s (inside %v): the link's target was overwritten", suffix, inside)
			}
		}
	}
}

// A link to a directory inside the tree stays inside it: it is followed.
func TestGetSymlinkInsideTreeFollowed(t *testing.T) {
	t.Parallel()
	data := payload(100<<10, 62)
	s, _ := serve(t, data)
	dir := t.TempDir()
	os.Mkdir(filepath.Join(dir, "real"), 0o755)
	if err := os.Symlink("real", filepath.Join(dir, "sub")); err != nil {
		t.Skip("no symbolic links:", err)
	}
	if _, err := get(t, fastOptions(), dir, fileFor("sub/x.bin", data, plen, s.URL)); err != nil {
		t.Fatal(err)
	}
	mustMatch(t, dir, "real/x.bin", data)
}

// A .part with another name (a hard link) is not written in place, and a
// state that is not a regular file is not read (a FIFO would hang).
func TestGetOddWorkFilesRefused(t *testing.T) {
	t.Parallel()
	data := payload(100<<10, 67)
	s, _ := serve(t, data)
	dir := t.TempDir()
	victim := filepath.Join(t.TempDir(), "victim")
	os.WriteFile(victim, []byte("precious"), 0o644)
	if err := os.Link(victim, filepath.Join(dir, "x.bin.part")); err != nil {
		t.Skip("no hard links:", err)
	}
	_, err := get(t, fastOptions(), dir, fileFor("x.bin", data, plen, s.URL))
	if err == nil || !strings.Contains(err.Error(), "hard links") {
		t.Errorf("error %v, want one about hard links", err)
	}
	if got, _ := os.ReadFile(victim); string(got) != "precious" {
		t.Error("the other name's bytes were overwritten")
	}
	dir = t.TempDir()
	if err := mkfifo(filepath.Join(dir, "x.bin.rsdump-state")); err != nil {
		t.Skip("no FIFOs:", err)
	}
	os.WriteFile(filepath.Join(dir, "x.bin.part"), data[:1000], 0o644)
	f := fileFor("x.bin", data, 0, s.URL) // only ranges: the state would be read
	_, err = get(t, fastOptions(), dir, f)
	if err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("error %v, want one about a file that is not regular", err)
	}
}
