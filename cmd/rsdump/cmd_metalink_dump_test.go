package main

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/rsdump/rsdump/internal/verifytest"
	"github.com/rsdump/rsdump/layout"
	"github.com/rsdump/rsdump/metalink"
	"github.com/rsdump/rsdump/pack"
	"github.com/rsdump/rsdump/resourcesync"
)

// packForDump packs three files into two packages with two mirrors and
// 64 KiB Metalink pieces.
func packForDump(t *testing.T) (*pack.Result, string) {
	t.Helper()
	src := mlTree(t, map[string][]byte{"a.bin": mlRandom(4, 200000), "b.bin": mlRandom(5, 200000), "c.bin": mlRandom(6, 10000)})
	o := pack.Options{BaseURL: "http://127.0.0.1/rs/", MaxPackageSize: 250000, Metalink: &pack.MetalinkOptions{
		PieceLength: 64 << 10,
		Mirrors:     []layout.Mirror{{BaseURL: "http://127.0.0.31/rs", Priority: 2}, {BaseURL: "http://127.0.0.12/x/"}},
	}}
	res, out := mlPack(t, src, o)
	if len(res.Packages) < 2 {
		t.Fatalf("%d packages, want 2 or more", len(res.Packages))
	}
	return res, out
}

// TestMetalinkFromDump: the Metalink made from resourcedump.xml and the
// packages beside it lists, for each package, exactly what pack wrote in
// the package's own .meta4 (mirrors carry no location in the dump).
func TestMetalinkFromDump(t *testing.T) {
	t.Parallel()
	res, dir := packForDump(t)
	out := filepath.Join(t.TempDir(), "dump.meta4")
	code, _, stderr := rsdump(t, "metalink", filepath.Join(dir, "resourcedump.xml"), "--piece-length", "65536", "-o", out)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	m := mlDecode(t, out)
	if len(m.Files) != len(res.Packages) {
		t.Fatalf("%d files for %d packages", len(m.Files), len(res.Packages))
	}
	for i, p := range res.Packages {
		want := mlDecode(t, filepath.Join(dir, p.Metalink)).Files[0]
		if !reflect.DeepEqual(m.Files[i], want) {
			t.Errorf("file %d:\n got %+v\nwant %+v", i, m.Files[i], want)
		}
	}
}

// TestMetalinkFromDumpMissingPackage: a package not beside the dump is
// listed from the dump alone, without pieces, and said so on stderr.
func TestMetalinkFromDumpMissingPackage(t *testing.T) {
	t.Parallel()
	res, dir := packForDump(t)
	p := res.Packages[1]
	if err := os.Remove(filepath.Join(dir, p.Name)); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := rsdump(t, "metalink", filepath.Join(dir, "resourcedump.xml"), "--mirror", "http://127.0.0.33/,priority=3")
	if code != exitOK || !strings.Contains(stderr, "1 of ") || !strings.Contains(stderr, "without piece hashes") {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	m, _, err := metalink.Decode(strings.NewReader(stdout))
	if err != nil {
		t.Fatal(err)
	}
	f := m.Files[1]
	if len(f.Pieces) != 0 || *f.Size != p.Length || f.Hashes[0] != (metalink.Hash{Type: "sha-256", Value: p.SHA256}) {
		t.Errorf("missing package's file: %+v", f)
	}
	want := []metalink.URL{ // the first mirror is the <loc>: no package is under --base-url
		{URL: "http://127.0.0.31/rs/" + p.Name, Priority: 1},
		{URL: "http://127.0.0.12/x/" + p.Name, Priority: 2},
		{URL: "http://127.0.0.33/" + p.Name, Priority: 3},
	}
	if !reflect.DeepEqual(f.URLs, want) {
		t.Errorf("urls %+v\nwant %+v", f.URLs, want)
	}
	if len(m.Files[0].Pieces) != 1 {
		t.Error("the package present got no pieces")
	}
}

// TestMetalinkFromDumpMismatch: a local package that is not the one the
// dump describes fails the command, naming the package.
func TestMetalinkFromDumpMismatch(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		damage func([]byte) []byte
		want   string
	}{
		{"flipped byte", func(b []byte) []byte { b[len(b)/2] ^= 1; return b }, "sha-256 on disk is"},
		{"truncated", func(b []byte) []byte { return b[:len(b)-1] }, "bytes on disk"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, dir := packForDump(t)
			path := filepath.Join(dir, res.Packages[0].Name)
			b, _ := os.ReadFile(path)
			if err := os.WriteFile(path, c.damage(b), 0o644); err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(dir, "x.meta4")
			code, _, stderr := rsdump(t, "metalink", filepath.Join(dir, "resourcedump.xml"), "-o", out)
			if code != exitFailed || !strings.Contains(stderr, res.Packages[0].Name) || !strings.Contains(stderr, c.want) {
				t.Errorf("exit %d, stderr %q; want 1 naming the package and %q", code, stderr, c.want)
			}
			if _, err := os.Stat(out); err == nil {
				t.Error("output written despite the mismatch")
			}
		})
	}
}

// TestMetalinkFromDumpIndex splits a dump into an index and two parts
// beside it; every package of every part is listed. Without its parts,
// the index is an error naming the missing part.
func TestMetalinkFromDumpIndex(t *testing.T) {
	t.Parallel()
	res, dir := packForDump(t)
	entries := readDumpEntries(t, filepath.Join(dir, "resourcedump.xml"))
	writeDumpDoc(t, filepath.Join(dir, "part1.xml"), resourcesync.URLSet, entries[:1])
	writeDumpDoc(t, filepath.Join(dir, "part2.xml"), resourcesync.URLSet, entries[1:])
	index := []resourcesync.URL{{Loc: "http://127.0.0.1/rs/part1.xml"}, {Loc: "http://127.0.0.1/rs/part2.xml"}}
	writeDumpDoc(t, filepath.Join(dir, "index.xml"), resourcesync.SitemapIndex, index)
	code, stdout, stderr := rsdump(t, "metalink", filepath.Join(dir, "index.xml"), "--piece-length", "65536")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	m, _, err := metalink.Decode(strings.NewReader(stdout))
	if err != nil || len(m.Files) != len(res.Packages) {
		t.Fatalf("%v, %d files", err, len(m.Files))
	}
	for i, p := range res.Packages {
		if m.Files[i].Name != p.Name || len(m.Files[i].Pieces) != 1 {
			t.Errorf("file %d: %s with %d piece lists, want %s with 1", i, m.Files[i].Name, len(m.Files[i].Pieces), p.Name)
		}
	}
	os.Remove(filepath.Join(dir, "part2.xml"))
	code, _, stderr = rsdump(t, "metalink", filepath.Join(dir, "index.xml"))
	if code != exitFailed || !strings.Contains(stderr, "part2.xml") {
		t.Errorf("without part2.xml: exit %d, stderr %q", code, stderr)
	}
}

// TestMetalinkFilesFlag: --files treats a dump document as a plain file.
func TestMetalinkFilesFlag(t *testing.T) {
	t.Parallel()
	_, dir := packForDump(t)
	doc := filepath.Join(dir, "resourcedump.xml")
	code, stdout, stderr := rsdump(t, "metalink", "--files", doc, "--mirror", "http://m/")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	m, _, err := metalink.Decode(strings.NewReader(stdout))
	if err != nil || len(m.Files) != 1 || m.Files[0].Name != "resourcedump.xml" {
		t.Errorf("%v %+v", err, m)
	}
}

func readDumpEntries(t *testing.T, path string) []resourcesync.URL {
	_, urls := verifytest.ReadDoc(t, path)
	return urls
}

func writeDumpDoc(t *testing.T, path string, kind resourcesync.Kind, urls []resourcesync.URL) {
	verifytest.WriteDoc(t, path, resourcesync.Header{Kind: kind, MD: resourcesync.MD{Capability: resourcesync.CapResourceDump}}, urls)
}

// TestMetalinkFromDumpURLUnreachable: a dump URL that cannot be read is
// an error naming the URL, not a missing local file.
func TestMetalinkFromDumpURLUnreachable(t *testing.T) {
	t.Parallel()
	u := deadURL(t) + "/rs/resourcedump.xml"
	code, _, stderr := rsdump(t, "metalink", u)
	if code != exitFailed || !strings.Contains(stderr, u) || strings.Contains(stderr, "stat ") {
		t.Errorf("exit %d, stderr %q; want exit 1 naming %s", code, stderr, u)
	}
}
