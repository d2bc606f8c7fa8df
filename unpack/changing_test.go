package unpack_test

import (
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/rsdump/rsdump/finding"
	"github.com/rsdump/rsdump/internal/verifytest"
	"github.com/rsdump/rsdump/unpack"
)

// A package whose tail changes between the first reads (central
// directory, manifest) and the hash pass must be refused: the hash then
// matches the dump, but the manifest used was another one.
func TestUnpackRefusesPackageChangedDuringRun(t *testing.T) {
	t.Parallel()
	good, evil := verifytest.TailSwap(t)
	src := t.TempDir()
	doc := verifytest.ResourceDump(t, src, good)
	zipPath := filepath.Join(src, "resourcedump-00001.zip")
	writeFile(t, zipPath, evil)
	var once sync.Once
	opts := unpack.Options{Jobs: 1, Events: func(e finding.Event) {
		if _, ok := e.(finding.Progress); ok {
			once.Do(func() { writeFile(t, zipPath, good) }) // in place: the open file sees it
		}
	}}
	dir := t.TempDir()
	res, fs := run(t, doc, dir, opts)
	got := contents(readTree(t, dir))
	if strings.Contains(got["a.txt"], "EVIL") {
		t.Errorf("a.txt restored as %q from a manifest the package hash does not cover", got["a.txt"])
	}
	if len(got) != 0 {
		t.Errorf("files written from a package that changed: %v", got)
	}
	// This package is read in one read ahead, before it changes, so
	// what unpack used is the evil package throughout, whose hash is not
	// the document's; a larger one read in parts finds the change.
	f, changed := find(fs, finding.Error, finding.CheckRead, "")
	_, hashBad := find(fs, finding.Error, finding.CheckHash, "")
	if !(changed && strings.Contains(f.Msg, "changed")) && !hashBad {
		t.Errorf("no finding that the package changed or differs from the document:\n%s", dump(fs))
	}
	if res.Problems() == 0 {
		t.Errorf("result has no problem: %+v", res)
	}
}

// A package whose bitstreams verify but whose own hash does not is
// refused after staging: the summary counts no byte of it as written.
func TestUnpackCountsOnlyBytesWritten(t *testing.T) {
	t.Parallel()
	good, evil := verifytest.TailSwap(t)
	src := t.TempDir()
	doc := verifytest.ResourceDump(t, src, good)
	writeFile(t, filepath.Join(src, "resourcedump-00001.zip"), evil)
	res, fs := run(t, doc, t.TempDir(), unpack.Options{})
	if res.Written != 0 || res.Bytes != 0 || res.Refused != 2 {
		t.Errorf("%d files written (%d B), %d refused; want 0 (0 B), 2\n%s", res.Written, res.Bytes, res.Refused, dump(fs))
	}
}
