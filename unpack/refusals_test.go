package unpack_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/rsdump/rsdump/deststate"
	"github.com/rsdump/rsdump/finding"
	"github.com/rsdump/rsdump/layout"
	"github.com/rsdump/rsdump/pack"
	"github.com/rsdump/rsdump/unpack"
)

// TestPackageOfOtherLength: a package whose length is not the one the
// dump document gives is not the package listed: refused whole, naming
// both lengths and the document, and nothing of it lands.
func TestPackageOfOtherLength(t *testing.T) {
	t.Parallel()
	out := packDir(t, tree(t, map[string]string{"a.txt": "a", "b.txt": "b"}), pack.Options{})
	zips, _ := filepath.Glob(filepath.Join(out, "resourcedump-*.zip"))
	fi, err := os.Stat(zips[0])
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(zips[0], os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("appended")
	f.Close()
	dst := t.TempDir()
	res, fs := run(t, filepath.Join(out, layout.DumpName), dst, unpack.Options{})
	f0, ok := find(fs, finding.Error, finding.CheckLength, "")
	if !ok || res.Written != 0 || !strings.Contains(f0.Msg, "package length differs from "+filepath.Join(out, layout.DumpName)) ||
		f0.Actual != itoa(fi.Size()+8) || f0.Expected != itoa(fi.Size()) {
		t.Fatalf("%+v, want the package refused naming both lengths\n%s", res, dump(fs))
	}
	if got := readTree(t, dst); len(got) != 0 {
		t.Errorf("files landed: %v", got)
	}
}

// TestOpenTreeOfOtherDirectory: Options.Dir, a tree the caller holds open,
// must be the directory unpacked into.
func TestOpenTreeOfOtherDirectory(t *testing.T) {
	t.Parallel()
	out := packDir(t, tree(t, map[string]string{"a.txt": "a"}), pack.Options{})
	held := t.TempDir()
	d, err := deststate.Open(held, deststate.Options{Command: "test"})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	other := t.TempDir()
	_, err = unpack.Unpack(context.Background(), filepath.Join(out, layout.DumpName), other, unpack.Options{Mapper: mapper(t), Dir: d})
	if err == nil || !strings.Contains(err.Error(), "give one directory") || !strings.Contains(err.Error(), held) {
		t.Fatalf("%v, want an error naming both directories", err)
	}
	if got := readTree(t, other); len(got) != 0 {
		t.Errorf("files landed: %v", got)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
