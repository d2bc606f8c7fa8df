package metalink

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/rsdump/rsdump/finding"
	"github.com/rsdump/rsdump/internal/digest"
	"github.com/rsdump/rsdump/resourcesync"
)

// A Builder makes <file> elements: from local files, each read once for
// its size, sha-256 and piece hashes, and from the packages a ResourceSync
// dump document lists.
type Builder struct {
	PieceLength int64 // 0: DefaultPieceLength of each file's size
	// Mirrors are base URLs: each adds a <url> of the base URL followed by
	// the file name, with the mirror's priority and location.
	Mirrors []URL
	// Events, when set, receives a finding.Progress for every read of a
	// file, its Unit the file's name.
	Events func(finding.Event)
}

// HashFile reads path once into a File named name: size, sha-256 and
// piece hashes; every byte also goes to extra when it is not nil.
func (b *Builder) HashFile(ctx context.Context, path, name string, extra io.Writer) (*File, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file", path)
	}
	pl := b.PieceLength
	if pl == 0 {
		pl = DefaultPieceLength(st.Size())
	}
	var r io.Reader = &hashReader{ctx: ctx, r: fh, events: b.Events, name: name}
	if extra != nil {
		r = io.TeeReader(r, extra)
	}
	f, err := FileFromReader(name, r, pl)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return f, nil
}

// MirrorURLs appends a URL per mirror (its base URL plus name) to urls,
// leaving out repeats.
func (b *Builder) MirrorURLs(urls []URL, name string) []URL {
	for _, m := range b.Mirrors {
		u := m
		u.URL = strings.TrimSuffix(m.URL, "/") + "/" + url.PathEscape(name)
		urls = appendURL(urls, u)
	}
	return urls
}

func appendURL(urls []URL, u URL) []URL {
	for _, v := range urls {
		if v.URL == u.URL {
			return urls
		}
	}
	return append(urls, u)
}

// hashReader stops reading when ctx is canceled and counts progress.
type hashReader struct {
	ctx    context.Context
	r      io.Reader
	events func(finding.Event)
	name   string
}

func (c *hashReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	n, err := c.r.Read(p)
	if c.events != nil && n > 0 {
		c.events(finding.Progress{Bytes: int64(n), Unit: c.name})
	}
	return n, err
}

// DumpHead is the document-level part of a Metalink for a dump: published
// is when the dump was completed, or its snapshot time.
func DumpHead(h resourcesync.Header) *Metalink {
	m := &Metalink{Generator: "rsdump", Published: h.MD.Completed}
	if m.Published.IsZero() {
		m.Published = h.MD.At
	}
	return m
}

// DumpStats counts the packages of a dump, and those not found beside
// its document, which are listed without piece hashes.
type DumpStats struct{ Packages, Missing int }

// Dump encodes a <file> per package of the dump document at loc, and of
// the parts of an index: the package's <loc> (priority 1) and every
// rel="duplicate" link (pri becomes priority) as URLs, then the Builder's
// mirrors, and the length and hashes the dump states. A package present
// beside the document, named by the last segment of its <loc>, is read to
// add piece hashes, and its length and hashes must match the dump's.
func (b *Builder) Dump(ctx context.Context, e *Encoder, loc string) (DumpStats, error) {
	var st DumpStats
	l := resourcesync.Loader{
		Document: func(d *resourcesync.Document) error {
			if !resourcesync.IsDump(d.Header) {
				return fmt.Errorf("%s: not a Resource Dump or Change Dump", d.Loc)
			}
			return nil
		},
		Entry: func(d *resourcesync.Document, _ int, u resourcesync.URL) error {
			if d.Header.Kind == resourcesync.SitemapIndex {
				return nil
			}
			f, local, err := b.packageFile(ctx, u, d.Loc)
			if err != nil {
				return err
			}
			st.Packages++
			if !local {
				st.Missing++
			}
			if err := e.Encode(f); err != nil {
				return fmt.Errorf("%s: package %s: %w", d.Loc, u.Loc, err)
			}
			return nil
		},
	}
	return st, l.Load(ctx, loc)
}

// packageFile turns a dump entry into a <file>: URLs, length and hashes
// from the dump, and piece hashes from the package when it is beside a
// local document, which must then match the dump. local says whether it
// was.
func (b *Builder) packageFile(ctx context.Context, u resourcesync.URL, doc string) (*File, bool, error) {
	name, err := lastSegment(u.Loc)
	if err != nil {
		return nil, false, fmt.Errorf("%s: package %s: %w", doc, u.Loc, err)
	}
	f := &File{Name: name, URLs: b.MirrorURLs(dumpURLs(u), name)}
	var want digest.Set
	if u.MD != nil {
		f.Size = u.MD.Length
		if want, err = digest.Parse(u.MD.Hash); err != nil {
			return nil, false, fmt.Errorf("%s: package %s: hash attribute: %w", doc, name, err)
		}
		f.Hashes = metalinkHashes(want)
	}
	if resourcesync.IsURL(doc) {
		return f, false, nil // a remote document's packages are not on this disk
	}
	local, err := b.addPieces(ctx, f, filepath.Join(filepath.Dir(doc), name), filepath.Base(doc), want)
	return f, local, err
}

// dumpURLs lists the package's <loc> first, then its rel="duplicate"
// links with pri as the priority.
func dumpURLs(u resourcesync.URL) []URL {
	urls := []URL{{URL: u.Loc, Priority: 1}}
	for _, l := range u.Links {
		if l.Rel == "duplicate" {
			urls = appendURL(urls, URL{URL: l.Href, Priority: l.Pri})
		}
	}
	return urls
}

// metalinkHashes keeps the algorithms Metalink readers know (IANA names).
func metalinkHashes(s digest.Set) []Hash {
	var hs []Hash
	for _, sum := range s {
		if digest.IANA(sum.Alg) {
			hs = append(hs, Hash{Type: sum.Alg, Value: sum.Hex})
		}
	}
	return hs
}

// addPieces reads the local package at p, if there is one, checks its
// length and hashes against the dump's and adds its piece hashes.
func (b *Builder) addPieces(ctx context.Context, f *File, p, doc string, want digest.Set) (bool, error) {
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
	lf, err := b.HashFile(ctx, p, f.Name, mh)
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
func matchDump(p, doc string, f, local *File, want, got digest.Set) error {
	if f.Size != nil && *f.Size != *local.Size {
		return fmt.Errorf("package %s: %d bytes on disk, %s says %d", p, *local.Size, doc, *f.Size)
	}
	if _, bad, _ := digest.Check(want, got); len(bad) > 0 {
		return fmt.Errorf("package %s: %s on disk is %s, %s says %s", p, bad[0].Alg, bad[0].Got, doc, bad[0].Want)
	}
	return nil
}

// lastSegment is the file name a package URL ends with.
func lastSegment(loc string) (string, error) {
	u, err := url.Parse(loc)
	if err != nil {
		return "", err
	}
	name := path.Base(u.Path)
	if err := CheckName(name); err != nil || name == "/" {
		return "", fmt.Errorf("no usable file name at the end of %q", loc)
	}
	return name, nil
}
