package unpack_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/rsdump/rsdump/finding"
	"github.com/rsdump/rsdump/unpack"
	"github.com/rsdump/rsdump/verify/verifytest"
)

// TestStagingConflicts: of two bitstreams of a package whose paths
// conflict (one needs as a directory what the other is as a file), the
// first in the package is written and the second refused, naming its
// target, whichever is the file; the run goes on with the rest.
func TestStagingConflicts(t *testing.T) {
	large := strings.Repeat("L", 70<<10)
	z, _ := verifytest.Package(t, []verifytest.File{
		{Rel: "x", Data: large}, {Rel: "x/y.txt", Data: "small"}, // large first
		{Rel: "p/q.txt", Data: "small"}, {Rel: "p", Data: large}, // small first
		{Rel: "m.txt", Data: "m"},
	})
	src := writeFile(t, filepath.Join(t.TempDir(), "p.zip"), z)
	dst := t.TempDir()
	res, fs := run(t, src, dst, unpack.Options{})
	equalMaps(t, "tree", contents(readTree(t, dst)), map[string]string{"x": large, "p/q.txt": "small", "m.txt": "m"})
	for _, p := range []string{"x/y.txt", "p"} {
		if f, ok := find(fs, finding.Error, unpack.CheckRefused, p); !ok || !strings.Contains(f.Msg, "another bitstream of the package") {
			t.Errorf("%s not refused, or not named\n%s", p, dump(fs))
		}
	}
	if res.Written != 3 || res.Refused != 2 {
		t.Fatalf("%+v\n%s", res, dump(fs))
	}
}
