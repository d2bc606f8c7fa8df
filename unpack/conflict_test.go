package unpack_test

import (
	"archive/zip"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rsdump/rsdump/finding"
	"github.com/rsdump/rsdump/internal/verifytest"
	"github.com/rsdump/rsdump/resourcesync"
	"github.com/rsdump/rsdump/unpack"
)

// TestStagingConflicts: of two bitstreams of a package whose paths
// conflict (one needs as a directory what the other is as a file), the
// first in the package is written and the second refused, naming its
// target, whichever is the file; the run goes on with the rest.
func TestStagingConflicts(t *testing.T) {
	t.Parallel()
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

// TestFailedBitstreamFreesItsPath: a bitstream that fails its hash is
// removed from the staging directory before the next one is staged, so a
// later bitstream whose path it was in the way of lands, as if the failed
// one had never been there: a file where the later one needs a directory,
// and a directory (left empty) where the later one is a file. The staging
// files are made ahead of the bitstreams (creator): this fails if those
// made before the failure are not made again after it.
func TestFailedBitstreamFreesItsPath(t *testing.T) {
	t.Parallel()
	good := []verifytest.File{{Rel: "x", Data: "fails its hash"}, {Rel: "x/y.txt", Data: "lands"},
		{Rel: "p/q.txt", Data: "fails its hash"}, {Rel: "p", Data: "lands too"}, {Rel: "m.txt", Data: "m"}}
	var urls []resourcesync.URL
	var entries []verifytest.Entry
	for _, f := range good {
		urls = append(urls, verifytest.URLFor(f, "/resources/"))
		data := f.Data
		if data == "fails its hash" {
			data = "fails its HASH"
		}
		entries = append(entries, verifytest.Entry{Name: "resources/" + f.Rel, Data: []byte(data), Method: zip.Store})
	}
	manifest := verifytest.Manifest(t, verifytest.ResourceMD(), urls)
	z := verifytest.Zip(t, append(entries, verifytest.Entry{Name: "manifest.xml", Data: manifest, Method: zip.Deflate}))
	dst := t.TempDir()
	res, fs := run(t, writeFile(t, filepath.Join(t.TempDir(), "p.zip"), z), dst, unpack.Options{})
	equalMaps(t, "tree", contents(readTree(t, dst)), map[string]string{"x/y.txt": "lands", "p": "lands too", "m.txt": "m"})
	if res.Written != 3 || res.Refused != 2 {
		t.Fatalf("%+v\n%s", res, dump(fs))
	}
}
