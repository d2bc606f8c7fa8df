package unpack_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/rsdump/rsdump/finding"
	"github.com/rsdump/rsdump/internal/verifytest"
	"github.com/rsdump/rsdump/pack"
	"github.com/rsdump/rsdump/unpack"
)

// packSmall packs the example into packages of about 1 KiB, so that it
// spreads over several.
func packSmall(t *testing.T) (src, out string) {
	src, out = tree(t, exampleFiles(t)), t.TempDir()
	o := pack.Options{BaseURL: verifytest.BaseURL, At: fixedTime, MaxPackageSize: 1 << 10}
	res, err := pack.Pack(t.Context(), src, out, o)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Packages) < 2 {
		t.Fatalf("%d packages, want several", len(res.Packages))
	}
	return src, out
}

// A directory holding a copy of a dump (what pack or get leaves) is a
// source: its dump document is applied, and a package no document lists
// is reported and left alone.
func TestUnpackDirectory(t *testing.T) {
	t.Parallel()
	src, out := packSmall(t)
	stray := filepath.Join(out, "resourcedump-99999.zip")
	z, _ := verifytest.Package(t, []verifytest.File{{Rel: "stray.txt", Data: "not listed"}})
	os.WriteFile(stray, z, 0o644)
	dst := t.TempDir()
	res, fs := run(t, out, dst, unpack.Options{})
	if res.Errors != 0 || res.Written != 9 {
		t.Fatalf("%+v\n%s", res, dump(fs))
	}
	if _, ok := find(fs, finding.Warning, unpack.CheckSkipped, ""); !ok {
		t.Errorf("the stray package was not reported:\n%s", dump(fs))
	}
	equalMaps(t, "tree", readTree(t, dst), readTree(t, src))
}

// Several packages given on the command line are applied in turn.
func TestUnpackSeveralPackages(t *testing.T) {
	t.Parallel()
	src, out := packSmall(t)
	zips, _ := filepath.Glob(filepath.Join(out, "*.zip"))
	dst := t.TempDir()
	var fs []finding.Finding
	res, err := unpack.UnpackAll(context.Background(), zips, dst, unpack.Options{Mapper: mapper(t), Events: finding.OnFindings(func(f finding.Finding) { fs = append(fs, f) })})
	if err != nil {
		t.Fatal(err)
	}
	if res.Problems() != 0 || res.Packages != len(zips) || res.Written != 9 {
		t.Fatalf("%+v\n%s", res, dump(fs))
	}
	equalMaps(t, "tree", readTree(t, dst), readTree(t, src))
}
