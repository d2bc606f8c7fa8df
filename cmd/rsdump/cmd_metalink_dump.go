package main

import (
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path"
	"path/filepath"

	"github.com/rsdump/rsdump/internal/digest"
	"github.com/rsdump/rsdump/metalink"
	"github.com/rsdump/rsdump/resourcesync"
)

// sniffDump reports whether path is a Resource Dump or Change Dump
// document (or an index of them), and returns its header.
func sniffDump(p string) (resourcesync.Header, bool) {
	f, err := os.Open(p)
	if err != nil {
		return resourcesync.Header{}, false
	}
	defer f.Close()
	d, err := resourcesync.NewDecoder(f)
	if err != nil {
		return resourcesync.Header{}, false
	}
	h := d.Header()
	return h, isDumpCapability(h.MD.Capability)
}

func isDumpCapability(c string) bool {
	return c == resourcesync.CapResourceDump || c == resourcesync.CapChangeDump
}

// dumpHead is the document-level part of the Metalink: published is when
// the dump was completed, or its snapshot time.
func dumpHead(h resourcesync.Header) *metalink.Metalink {
	m := &metalink.Metalink{Generator: "rsdump", Published: h.MD.Completed}
	if m.Published.IsZero() {
		m.Published = h.MD.At
	}
	return m
}

// dump encodes a <file> per package of the dump document at p, reading
// the parts of an index from beside it.
func (w *metalinkWriter) dump(e *metalink.Encoder, p string) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	d, err := resourcesync.NewDecoder(f)
	if err != nil {
		return fmt.Errorf("%s: %w", p, err)
	}
	st := &dumpStats{}
	if d.Header().Kind == resourcesync.SitemapIndex {
		err = w.dumpIndex(e, d, p, st)
	} else {
		err = w.dumpPackages(e, d, p, st)
	}
	if err == nil && st.missing > 0 && !w.quiet {
		fmt.Fprintf(w.stderr, "rsdump: %d of %d packages not found beside %s: listed without piece hashes\n", st.missing, st.total, p)
	}
	return err
}

type dumpStats struct{ total, missing int }

// dumpIndex reads every part a Resource Dump Index lists; each must be a
// file beside the index, named by the last segment of its <loc>.
func (w *metalinkWriter) dumpIndex(e *metalink.Encoder, d *resourcesync.Decoder, index string, st *dumpStats) error {
	return eachEntry(d, index, func(u resourcesync.URL) error { return w.dumpPart(e, index, u.Loc, st) })
}

// eachEntry runs fn on every entry d decodes from doc. A decoding error
// is prefixed with doc; fn's errors already say what they are about.
func eachEntry(d *resourcesync.Decoder, doc string, fn func(resourcesync.URL) error) error {
	var fnErr error
	err := d.Each(func(u resourcesync.URL) error { fnErr = fn(u); return fnErr })
	if err != nil && err != fnErr {
		return fmt.Errorf("%s: %w", doc, err)
	}
	return err
}

func (w *metalinkWriter) dumpPart(e *metalink.Encoder, index, loc string, st *dumpStats) error {
	name, err := lastSegment(loc)
	if err != nil {
		return fmt.Errorf("%s: part %s: %w", index, loc, err)
	}
	p := filepath.Join(filepath.Dir(index), name)
	f, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%s: part %s is not beside the index (only local parts are read)", index, name)
	}
	if err != nil {
		return err
	}
	defer f.Close()
	d, err := resourcesync.NewDecoder(f)
	if err != nil {
		return fmt.Errorf("%s: %w", p, err)
	}
	if h := d.Header(); h.Kind != resourcesync.URLSet || !isDumpCapability(h.MD.Capability) {
		return fmt.Errorf("%s: part of %s is not a Resource Dump or Change Dump <urlset>", p, index)
	}
	return w.dumpPackages(e, d, p, st)
}

func (w *metalinkWriter) dumpPackages(e *metalink.Encoder, d *resourcesync.Decoder, doc string, st *dumpStats) error {
	return eachEntry(d, doc, func(u resourcesync.URL) error {
		f, local, err := w.packageFile(u, doc)
		if err != nil {
			return err
		}
		st.total++
		if !local {
			st.missing++
		}
		if err := e.Encode(f); err != nil {
			return fmt.Errorf("%s: package %s: %w", doc, u.Loc, err)
		}
		return nil
	})
}

// packageFile turns a dump entry into a <file>: URLs, length and hashes
// from the dump, and piece hashes from the package when it is beside the
// document, which must then match the dump. local says whether it was.
func (w *metalinkWriter) packageFile(u resourcesync.URL, doc string) (*metalink.File, bool, error) {
	name, err := lastSegment(u.Loc)
	if err != nil {
		return nil, false, fmt.Errorf("%s: package %s: %w", doc, u.Loc, err)
	}
	f := &metalink.File{Name: name, URLs: w.mirrorURLs(dumpURLs(u), name)}
	var want digest.Set
	if u.MD != nil {
		f.Size = u.MD.Length
		if want, err = digest.Parse(u.MD.Hash); err != nil {
			return nil, false, fmt.Errorf("%s: package %s: hash attribute: %w", doc, name, err)
		}
		f.Hashes = metalinkHashes(want)
	}
	local, err := w.addPieces(f, filepath.Join(filepath.Dir(doc), name), filepath.Base(doc), want)
	return f, local, err
}

// dumpURLs lists the package's <loc> first, then its rel="duplicate"
// links with pri as the priority.
func dumpURLs(u resourcesync.URL) []metalink.URL {
	urls := []metalink.URL{{URL: u.Loc, Priority: 1}}
	for _, l := range u.Links {
		if l.Rel == "duplicate" {
			urls = appendURL(urls, metalink.URL{URL: l.Href, Priority: l.Pri})
		}
	}
	return urls
}

// metalinkHashes keeps the algorithms Metalink readers know (IANA names).
func metalinkHashes(s digest.Set) []metalink.Hash {
	var hs []metalink.Hash
	for _, sum := range s {
		if digest.IANA(sum.Alg) {
			hs = append(hs, metalink.Hash{Type: sum.Alg, Value: sum.Hex})
		}
	}
	return hs
}

// addPieces reads the local package at p, if there is one, checks its
// length and hashes against the dump's and adds its piece hashes.
func (w *metalinkWriter) addPieces(f *metalink.File, p, doc string, want digest.Set) (bool, error) {
	if _, err := os.Stat(p); errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	var others []string
	for _, alg := range want.Known() {
		if alg != digest.SHA256 {
			others = append(others, alg)
		}
	}
	mh, err := digest.NewMulti(others...)
	if err != nil {
		return false, err
	}
	lf, err := w.hashFile(p, f.Name, mh)
	if err != nil {
		return false, err
	}
	got := append(mh.Sums(), digest.Sum{Alg: digest.SHA256, Hex: lf.Hashes[0].Value})
	if err := matchDump(p, doc, f, lf, want, got); err != nil {
		return false, err
	}
	f.Size, f.Pieces = lf.Size, lf.Pieces
	if _, ok := f.WholeHash(digest.SHA256); !ok {
		f.Hashes = append(f.Hashes, lf.Hashes[0])
	}
	return true, nil
}

// matchDump fails when the package on disk is not the one the dump
// describes.
func matchDump(p, doc string, f, local *metalink.File, want, got digest.Set) error {
	if f.Size != nil && *f.Size != *local.Size {
		return fmt.Errorf("package %s: %d bytes on disk, %s says %d", p, *local.Size, doc, *f.Size)
	}
	if _, bad, _ := digest.Check(want, got); len(bad) > 0 {
		return fmt.Errorf("package %s: %s on disk is %s, %s says %s", p, bad[0].Alg, bad[0].Got, doc, bad[0].Want)
	}
	return nil
}

// lastSegment is the file name a package or part URL ends with.
func lastSegment(loc string) (string, error) {
	u, err := url.Parse(loc)
	if err != nil {
		return "", err
	}
	name := path.Base(u.Path)
	if err := metalink.CheckName(name); err != nil || name == "/" {
		return "", fmt.Errorf("no usable file name at the end of %q", loc)
	}
	return name, nil
}
