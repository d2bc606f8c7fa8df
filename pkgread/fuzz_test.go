package pkgread

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/rsdump/rsdump/finding"
	"github.com/rsdump/rsdump/internal/verifytest"
	"github.com/rsdump/rsdump/internal/ziprange"
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
// bound; every finding names the package; and a package read without an
// error is one a streaming reader sees the same (streamWalk).
func FuzzPackage(f *testing.F) {
	for _, s := range seeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var fs []finding.Finding
		rep := finding.NewReporter(func(e finding.Event) {
			if f, ok := e.(finding.Finding); ok {
				fs = append(fs, f)
			}
		})
		p, err := OpenPackage(bytes.NewReader(data), int64(len(data)), "fuzz", "", Limits{MaxRatio: 50}, rep)
		checkSources(t, fs)
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
		checkSources(t, fs)
		if !hasError(fs) {
			if err := streamWalk(data, p); err != nil {
				t.Fatalf("a package read without an error: %v", err)
			}
		}
	})
}

// FuzzLayout runs the layout checks over arbitrary bytes, without the
// manifest a package needs (which few mutations keep): every local header
// compared with its central record, then CheckLayout. An archive they
// find nothing wrong with must be the one a streaming reader sees: from
// offset 0, the local headers of exactly the central directory's entries,
// each leading to the data archive/zip reads, then the directory.
func FuzzLayout(f *testing.F) {
	for _, s := range seeds(f) {
		f.Add(s)
	}
	for _, z := range [][]byte{testZip(f, 3, "PK\x05\x06"), zip64Offsets(f, []rawFile{{name: "a", data: "x"}, {name: "b/", data: ""}}),
		straddled(f), decoyZip64(f), decoyPrefix(f)} {
		f.Add(z)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p, fs, err := newLayout(data)
		if err != nil {
			return
		}
		bad := false
		for _, f := range p.zr.File {
			if _, _, err := p.checkLocal(f); err != nil {
				bad = true
				p.localFailed(f)
			}
		}
		p.CheckLayout()
		if bad || hasError(*fs) {
			return
		}
		if err := streamWalk(data, p); err != nil {
			t.Fatalf("no finding, but %v", err)
		}
	})
}

func hasError(fs []finding.Finding) bool {
	for _, f := range fs {
		if f.Severity == finding.Error {
			return true
		}
	}
	return false
}

// checkSources fails unless every finding names the package.
func checkSources(t *testing.T, fs []finding.Finding) {
	for _, f := range fs {
		if f.Source != "fuzz" {
			t.Fatalf("finding without its package: %+v", f)
		}
	}
}

// streamWalk reads data as a streaming reader does, from offset 0, one
// local entry after another (its data's end from the central record, as
// the layout check takes it, and its data descriptor), until the central
// directory, and fails unless it meets the entries of p's directory, each
// once, each header leading to the data archive/zip reads.
func streamWalk(data []byte, p *Package) error {
	byName := make(map[string]*zip.File, len(p.zr.File))
	for _, f := range p.zr.File {
		byName[f.Name] = f
	}
	met := map[*zip.File]bool{}
	var at int64
	for at+ziprange.LocalLen <= int64(len(data)) && binary.LittleEndian.Uint32(data[at:]) == ziprange.SigLocal {
		h := data[at:]
		n, e := int64(binary.LittleEndian.Uint16(h[26:])), int64(binary.LittleEndian.Uint16(h[28:]))
		if at+ziprange.LocalLen+n > int64(len(data)) {
			return fmt.Errorf("the local header at %d runs past the end", at)
		}
		name := string(h[ziprange.LocalLen : ziprange.LocalLen+n])
		f := byName[name]
		if f == nil || met[f] {
			return fmt.Errorf("at offset %d a streaming reader meets %q, which the directory does not list (again)", at, name)
		}
		met[f] = true
		off, err := f.DataOffset()
		if err != nil || at+ziprange.LocalLen+n+e != off {
			return fmt.Errorf("%s: the local header at %d leads to %d, archive/zip reads the data at %d (%v)", name, at, at+ziprange.LocalLen+n+e, off, err)
		}
		at = off + int64(f.CompressedSize64)
		if f.Flags&flagDataDesc != 0 {
			d, err := p.descriptorLen(f, at)
			if err != nil {
				return fmt.Errorf("%s: %v", name, err)
			}
			at += d
		}
	}
	switch {
	case len(met) != len(p.zr.File):
		return fmt.Errorf("a streaming reader meets %d entries of the directory's %d", len(met), len(p.zr.File))
	case at != p.place.end.dirStart:
		return fmt.Errorf("a streaming reader's entries end at offset %d, the central directory starts at %d", at, p.place.end.dirStart)
	}
	return nil
}
