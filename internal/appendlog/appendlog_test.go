package appendlog

import (
	"os"
	"path/filepath"
	"testing"
)

// TestOpenEndsTornLine: a file ending without a newline gets one, once;
// an empty file and one ending with a newline are left as they are; the
// flags given are applied (O_TRUNC empties the file).
func TestOpenEndsTornLine(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, c := range []struct {
		name, before, after string
		extra               int
	}{
		{"new", "", "next\n", 0},
		{"whole", "a\n", "a\nnext\n", 0},
		{"torn", "a\nb", "a\nb\nnext\n", 0},
		{"truncated", "a\nb", "next\n", os.O_TRUNC},
	} {
		name := filepath.Join(dir, c.name)
		if c.before != "" {
			os.WriteFile(name, []byte(c.before), 0o644)
		}
		f, err := Open(OS, name, c.extra, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteString("next\n")
		f.Close()
		if got, _ := os.ReadFile(name); string(got) != c.after {
			t.Errorf("%s: %q, want %q", c.name, got, c.after)
		}
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	os.WriteFile(filepath.Join(dir, "inroot"), []byte("x"), 0o644)
	f, err := Open(root, "inroot", 0, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if got, _ := os.ReadFile(filepath.Join(dir, "inroot")); string(got) != "x\n" {
		t.Errorf("in a root: %q", got)
	}
}
