package pkgread

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/rsdump/rsdump/finding"
	"github.com/rsdump/rsdump/internal/verifytest"
	"github.com/rsdump/rsdump/resourcesync"
)

// seeds are the packages of the broken corpus and the intact one. The
// resync peer's package (5 MiB) would slow every execution a hundredfold.
func seeds(f *testing.F) [][]byte {
	out := [][]byte{verifytest.Intact(f)}
	for _, c := range verifytest.Corpus(f) {
		if len(c.Zip) < 64<<10 {
			out = append(out, c.Zip)
		}
	}
	return out
}

// FuzzManifest feeds the manifest decoder and checks: it never panics,
// entries are numbered in order, and no more than the sitemap limit are
// held.
func FuzzManifest(f *testing.F) {
	for _, p := range []string{
		filepath.Join("..", "testdata", "golden", "example.manifest.xml"),
		filepath.Join("..", "..", "shared", "peers", "resync", "rd-cli", "resourcedump00000.xml"),
	} {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add(verifytest.Manifest(f, verifytest.ResourceMD(), []resourcesync.URL{verifytest.URLFor(verifytest.BaseFiles[0], "/resources/")}))
	p, _ := verifytest.ChangeZip(f, verifytest.ChangePackage{Changes: []verifytest.File{{Rel: "x", Data: "y", Change: "created"}}})
	f.Add(p)
	f.Fuzz(func(t *testing.T, data []byte) {
		p := &Package{Source: "fuzz", Manifest: data, rep: finding.NewReporter(nil)}
		if err := p.decodeManifest("", nil); err != nil {
			return
		}
		if len(p.Bitstreams) > resourcesync.MaxEntries {
			t.Fatalf("%d entries held", len(p.Bitstreams))
		}
		for i, b := range p.Bitstreams {
			if b.N != i+1 {
				t.Fatalf("entry %d numbered %d", i+1, b.N)
			}
		}
	})
}

// FuzzPackage opens and reads arbitrary bytes as a package and checks the
// bounds that protect a Destination: reading never passes the manifest
// length by more than the one byte that detects it, nor the expansion
// bound.
func FuzzPackage(f *testing.F) {
	for _, s := range seeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := OpenPackage(bytes.NewReader(data), int64(len(data)), "fuzz", "", Limits{MaxRatio: 50}, finding.NewReporter(nil))
		if err != nil {
			return
		}
		for _, b := range p.InZipOrder() {
			res := p.Read(b, io.Discard)
			if b.Length >= 0 && res.Length > b.Length+1 {
				t.Fatalf("%s: read %d bytes, manifest length %d", b.File.Name, res.Length, b.Length)
			}
			if b.File.Method == 8 && res.Length > ratioLimit(int64(b.File.CompressedSize64), 50)+1 {
				t.Fatalf("%s: inflated %d bytes from %d", b.File.Name, res.Length, b.File.CompressedSize64)
			}
			if res.Severity == finding.OK && b.Length >= 0 && res.Length != b.Length {
				t.Fatalf("%s: OK with length %d, manifest %d", b.File.Name, res.Length, b.Length)
			}
		}
		p.CheckLayout()
	})
}
