package pkgread_test

import (
	"archive/zip"
	"bytes"
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"

	"github.com/rsdump/rsdump/finding"
	"github.com/rsdump/rsdump/internal/verifytest"
	"github.com/rsdump/rsdump/pkgread"
	"github.com/rsdump/rsdump/resourcesync"
)

// TestReadHashesEachBitstreamAlone reads bitstreams one after the other
// whose manifest entries list different algorithms, and the same ones
// again: each is verified by the hashes of its own bytes only, in the
// algorithms its entry lists (the reader reuses its hashes from one
// bitstream to the next).
func TestReadHashesEachBitstreamAlone(t *testing.T) {
	t.Parallel()
	hx := func(b []byte) string { return hex.EncodeToString(b) }
	attrs := []func(d []byte) string{
		func(d []byte) string {
			m, s := md5.Sum(d), sha256.Sum256(d)
			return "md5:" + hx(m[:]) + " sha-256:" + hx(s[:])
		},
		func(d []byte) string {
			m, s := md5.Sum(d), sha256.Sum256(d)
			return "md5:" + hx(m[:]) + " sha-256:" + hx(s[:])
		},
		func(d []byte) string { s := sha256.Sum256(d); return "sha-256:" + hx(s[:]) },
		func(d []byte) string { s := sha1.Sum(d); return "sha-1:" + hx(s[:]) + " x-unknown:00" },
		func(d []byte) string {
			s, m := sha256.Sum256(d), md5.Sum(d)
			return "sha-256:" + hx(s[:]) + " md5:" + hx(m[:])
		},
		func(d []byte) string { m := md5.Sum(d); return "md5:" + hx(m[:]) },
		func(d []byte) string { m := md5.Sum(d); return "md5:" + hx(m[:]) },
	}
	var entries []verifytest.Entry
	var urls []resourcesync.URL
	for i, attr := range attrs {
		f := verifytest.File{Rel: fmt.Sprintf("f%d.txt", i), Data: strings.Repeat(fmt.Sprint(i), i+1)}
		u := verifytest.URLFor(f, "/resources/")
		u.MD.Hash = attr([]byte(f.Data))
		urls = append(urls, u)
		entries = append(entries, verifytest.Entry{Name: "resources/" + f.Rel, Data: []byte(f.Data), Method: zip.Store})
	}
	manifest := verifytest.Manifest(t, verifytest.ResourceMD(), urls)
	entries = append(entries, verifytest.Entry{Name: "manifest.xml", Data: manifest, Method: zip.Deflate})
	z := verifytest.Zip(t, entries)
	var fs []finding.Finding
	p, err := pkgread.OpenPackage(bytes.NewReader(z), int64(len(z)), "p.zip", "", pkgread.Limits{}, finding.NewReporter(finding.OnFindings(func(f finding.Finding) { fs = append(fs, f) })))
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range p.InZipOrder() {
		res := p.Read(b, nil)
		var algs []string
		for _, s := range res.Sums {
			algs = append(algs, s.Alg)
		}
		if res.Severity == finding.Error || strings.Join(algs, " ") != strings.Join(b.Want.Known(), " ") {
			t.Errorf("entry %d (%s): severity %v, sums %v, want %v", b.N, urls[b.N-1].MD.Hash, res.Severity, res.Sums, b.Want.Known())
		}
	}
	for _, f := range fs {
		if f.Severity == finding.Error {
			t.Errorf("finding: %s", f)
		}
	}
}
