package pack

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rsdump/rsdump/finding"
	"github.com/rsdump/rsdump/layout"
	"github.com/rsdump/rsdump/resourcesync"
)

// packageSizeOf returns the size limit at which exactly these files fill
// one package: the planner's own estimate.
func packageSizeOf(o Options, src string, rels ...string) int64 {
	o.setDefaults()
	p := &planner{opts: &o}
	var total int64 = endOverhead + manifestOverhead()
	for _, rel := range rels {
		fi, _ := os.Stat(filepath.Join(src, rel))
		c, _ := p.estimate(item{rel: rel, size: fi.Size(), mtime: fi.ModTime()})
		total += c
	}
	return total
}

func packageNames(res *Result) []string {
	var names []string
	for _, p := range res.Packages {
		names = append(names, fmt.Sprintf("%d", p.Bitstreams))
	}
	return names
}

func TestSplitExactlyAtLimit(t *testing.T) {
	t.Parallel()
	src := tree(t, map[string]string{"a": strings.Repeat("a", 1000), "b": strings.Repeat("b", 1000), "c": strings.Repeat("c", 1000)})
	o := testOptions()
	o.Compress = Store
	o.MaxPackageSize = packageSizeOf(o, src, "a", "b")
	res, out := mustPack(t, src, o)
	if got := packageNames(res); fmt.Sprint(got) != "[2 1]" {
		t.Errorf("limit exactly a+b: packages of %v bitstreams, want [2 1]", got)
	}
	for _, p := range res.Packages {
		if p.Length > o.MaxPackageSize {
			t.Errorf("%s: %d bytes, over the %d limit", p.Name, p.Length, o.MaxPackageSize)
		}
		checkPackage(t, filepath.Join(out, p.Name))
	}
	o.MaxPackageSize--
	res, _ = mustPack(t, src, o)
	if got := packageNames(res); fmt.Sprint(got) != "[1 1 1]" {
		t.Errorf("limit one byte under a+b: packages of %v bitstreams, want [1 1 1]", got)
	}
}

func TestSplitFileOverLimit(t *testing.T) {
	t.Parallel()
	src := tree(t, map[string]string{"a": "small", "big": strings.Repeat("x", 50000), "c": "small"})
	o := testOptions()
	o.MaxPackageSize = 10000
	res, out := mustPack(t, src, o)
	if got := packageNames(res); fmt.Sprint(got) != "[1 1 1]" {
		t.Fatalf("packages of %v bitstreams, want [1 1 1]", got)
	}
	urls := checkPackage(t, filepath.Join(out, res.Packages[1].Name))
	if urls[0].Loc != "http://127.0.0.1/rs/big" {
		t.Errorf("second package holds %s, want big alone", urls[0].Loc)
	}
	checkDump(t, out, res)
}

func TestSplitAt50000Entries(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("skipping 50,001-file tree in -short mode")
	}
	files := map[string]string{}
	for i := range resourcesync.MaxEntries + 1 {
		files[fmt.Sprintf("d%02d/f%05d", i/1000, i)] = ""
	}
	src := tree(t, files)
	res, out := mustPack(t, src, testOptions())
	if got := packageNames(res); fmt.Sprint(got) != "[50000 1]" {
		t.Fatalf("packages of %v bitstreams, want [50000 1]", got)
	}
	checkPackage(t, filepath.Join(out, res.Packages[1].Name))
	if st, _ := os.Stat(filepath.Join(out, res.Packages[0].Manifest)); st.Size() > resourcesync.MaxBytes {
		t.Errorf("manifest of %d bytes exceeds the 50 MB limit", st.Size())
	}
	xmllint(t, filepath.Join(out, res.Packages[0].Manifest), urlsetSchema)
}

func TestDumpIndexOver50000Packages(t *testing.T) {
	t.Parallel()
	o := testOptions()
	o.setDefaults()
	dir := t.TempDir()
	pkgs := make([]PackageInfo, resourcesync.MaxEntries+1)
	for i := range pkgs {
		name := packageName(i + 1)
		pkgs[i] = PackageInfo{Name: name, Manifest: manifestName(name), Length: 100, SHA256: strings.Repeat("0", 64), At: fixedTime, Completed: fixedTime}
	}
	if err := writeDump(&o, dirOutput(t, dir), resourceDump, resourcesync.MD{At: fixedTime, Completed: fixedTime}, dumpEntries(&o, pkgs)); err != nil {
		t.Fatal(err)
	}
	f, _ := os.Open(filepath.Join(dir, layout.DumpName))
	defer f.Close()
	h, parts := decodeAll(t, f)
	if h.Kind != resourcesync.SitemapIndex || len(parts) != 2 {
		t.Fatalf("index kind %v with %d parts, want sitemapindex with 2", h.Kind, len(parts))
	}
	f2, _ := os.Open(filepath.Join(dir, dumpPartName(2)))
	defer f2.Close()
	h2, urls := decodeAll(t, f2)
	if l, ok := h2.Link("index"); !ok || l.Href != "http://127.0.0.1/rs/"+layout.DumpName || len(urls) != 1 {
		t.Errorf("second part: index link %+v, %d entries", l, len(urls))
	}
	xmllint(t, filepath.Join(dir, layout.DumpName), sitemapIndexSchema)
}

// TestResume interrupts a pack after its first package and runs it again:
// the first package is reused, not rewritten, and the result is the same
// as an uninterrupted run.
func TestResume(t *testing.T) {
	t.Parallel()
	// Ten packages: the pipeline holds at most three when the interrupt
	// comes, so the last ones are always still to write.
	files := map[string]string{}
	for _, c := range "abcdefghij" {
		files[string(c)] = strings.Repeat(string(c), 3000)
	}
	src := tree(t, files)
	o := testOptions()
	o.MaxPackageSize = 4000
	_, want := mustPack(t, src, o)

	out := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	o.Events = func(e finding.Event) {
		if _, ok := e.(PackageDone); ok {
			cancel()
		}
	}
	if _, err := Pack(ctx, src, out, o); err == nil {
		t.Fatal("interrupted Pack returned no error")
	}
	if _, err := os.Stat(filepath.Join(out, layout.DumpName)); err == nil {
		t.Fatal("interrupted run wrote the dump document")
	}
	first, _ := os.Stat(filepath.Join(out, packageName(1)))
	o.Events = nil
	res, err := Pack(context.Background(), src, out, o)
	if err != nil {
		t.Fatal(err)
	}
	// Packages already handed to publishing when the run was interrupted
	// are published; the ones not yet written are not.
	if !res.Packages[0].Reused || res.Packages[9].Reused {
		t.Errorf("first package reused %v, last %v; want true, false", res.Packages[0].Reused, res.Packages[9].Reused)
	}
	again, _ := os.Stat(filepath.Join(out, packageName(1)))
	if !os.SameFile(first, again) {
		t.Error("the first package was rewritten")
	}
	for _, name := range []string{packageName(1), packageName(2), packageName(3), packageName(10), layout.DumpName, layout.ResourceListName, layout.CapabilityListName} {
		if string(readFile(t, filepath.Join(out, name))) != string(readFile(t, filepath.Join(want, name))) {
			t.Errorf("%s differs from an uninterrupted run", name)
		}
	}
	if _, err := os.Stat(filepath.Join(out, journalName)); err == nil {
		t.Error("journal left after a complete run")
	}
}

// TestResumeDamagedPackage: a package whose bytes no longer match the
// journal is written again.
func TestResumeDamagedPackage(t *testing.T) {
	t.Parallel()
	src := tree(t, map[string]string{"a": strings.Repeat("a", 3000), "b": strings.Repeat("b", 3000)})
	o := testOptions()
	o.MaxPackageSize = 4000
	out := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	o.Events = func(e finding.Event) {
		if _, ok := e.(PackageDone); ok {
			cancel()
		}
	}
	Pack(ctx, src, out, o)
	f, _ := os.OpenFile(filepath.Join(out, packageName(1)), os.O_WRONLY, 0)
	f.WriteAt([]byte("X"), 100)
	f.Close()
	o.Events = nil
	res, err := Pack(context.Background(), src, out, o)
	if err != nil {
		t.Fatal(err)
	}
	if res.Packages[0].Reused {
		t.Error("a damaged package was reused")
	}
	checkPackage(t, filepath.Join(out, packageName(1)))
}
