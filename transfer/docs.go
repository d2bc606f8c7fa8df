package transfer

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/rsdump/rsdump/internal/atomic"
	"github.com/rsdump/rsdump/resourcesync"
	"github.com/rsdump/rsdump/sign"
)

// SaveDocuments saves the documents of the dump at source, a URL Resolve
// read as a dump document, into dir under the names a local copy of a
// dump uses (the last segment of each URL, as resourcesync.Resolve reads
// them): the dump document, the parts of an index, and each package's
// detached manifest (rel="contents") and Metalink (rel="describedby").
// With the packages Get saved beside them, dir then verifies and unpacks
// as the published dump does. Every document is read in full before any
// is given its final name, and the dump document is renamed last; a
// document that cannot be read in full from anywhere is an error naming
// it, and then none is saved. A source Resolve did not read as a dump
// document (a Metalink, a package, a local file) saves nothing.
func (g *Getter) SaveDocuments(ctx context.Context, dir, source string) ([]string, error) {
	g.mu.Lock()
	dump := g.dumps[source]
	g.mu.Unlock()
	if !dump {
		return nil, nil
	}
	root, err := openRoot(dir) // as Get: nothing is written outside dir
	if err != nil {
		return nil, err
	}
	defer root.Close()
	s := &docSaver{g: g, dir: dir, root: root, names: map[string]string{}}
	defer s.abort()
	l := resourcesync.Loader{Open: s.open, Entry: func(d *resourcesync.Document, _ int, u resourcesync.URL) error {
		return s.entry(ctx, d, u)
	}}
	if err := l.Load(ctx, source); err != nil {
		return nil, err
	}
	for _, ln := range s.links {
		if err := s.saveLink(ctx, ln); err != nil {
			return nil, err
		}
	}
	return s.commit()
}

// docSaver writes the documents of one dump under temporary names, and
// renames them all once every one was read.
type docSaver struct {
	g     *Getter
	dir   string
	root  *os.Root
	names map[string]string // local name → the URL saved under it
	files []savedDoc        // in the order read: the dump document first
	links []docLink
}

type savedDoc struct {
	f    *atomic.File
	path string
}

// docLink is a document an entry links to, with the places it may be
// read from: the link itself, then the same name beside each mirror.
type docLink struct {
	hrefs    []string
	metalink bool // a Metalink (rel="describedby"), which is read unsigned
}

// open is the Loader's OpenFunc: it fetches a document, copying every
// byte it reads, and all of it, to a temporary file.
func (s *docSaver) open(ctx context.Context, loc string) (io.ReadCloser, error) {
	f, err := s.create(loc)
	if err != nil {
		return nil, err
	}
	rc, err := s.g.OpenDocument(ctx, loc)
	if err != nil {
		f.Abort()
		return nil, err
	}
	s.files = append(s.files, savedDoc{f, filepath.Join(s.dir, resourcesync.BaseName(loc))})
	if err := s.saveSignature(ctx, loc, loc); err != nil {
		rc.Close()
		return nil, err
	}
	return &teeDoc{rc: rc, r: io.TeeReader(rc, f)}, nil
}

// saveSignature saves, under a trust (resourcesync.WithTrust), the
// signature of the document read from href beside its copy named as loc
// is, so that the copy is checked as the original is: the document was
// read only once this signature verified.
func (s *docSaver) saveSignature(ctx context.Context, href, loc string) error {
	if resourcesync.Trust(ctx) == nil {
		return nil
	}
	rc, err := s.g.OpenMetalink(ctx, sign.Loc(href)) // read as it is: it is checked with the document
	if err != nil {
		return err
	}
	defer rc.Close()
	f, err := s.create(sign.Loc(loc))
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, io.LimitReader(rc, sign.MaxSignature)); err != nil {
		f.Abort()
		return err
	}
	s.files = append(s.files, savedDoc{f, filepath.Join(s.dir, resourcesync.BaseName(sign.Loc(loc)))})
	return nil
}

// create starts the local copy of the document at loc, refusing a name
// that is unsafe or already taken by another URL.
func (s *docSaver) create(loc string) (*atomic.File, error) {
	name := resourcesync.BaseName(loc)
	if err := localName(name); err != nil || strings.Contains(name, "/") {
		return nil, fmt.Errorf("%s: no usable file name at its end (%q)", loc, name)
	}
	if prev, ok := s.names[name]; ok && prev != loc {
		return nil, fmt.Errorf("%s and %s would both be saved as %s", prev, loc, name)
	}
	s.names[name] = loc
	return atomic.CreateIn(s.root, name, 0o644)
}

// teeDoc copies a document to its temporary file as the decoder reads
// it, and on Close the rest of it, which the decoder leaves unread after
// the root element, so that the copy is byte for byte the document.
type teeDoc struct {
	rc io.ReadCloser
	r  io.Reader
}

func (t *teeDoc) Read(p []byte) (int, error) { return t.r.Read(p) }

func (t *teeDoc) Close() error {
	_, err := io.Copy(io.Discard, t.r)
	if cerr := t.rc.Close(); err == nil {
		err = cerr
	}
	return err
}

// entry notes the documents a package entry links to.
func (s *docSaver) entry(ctx context.Context, d *resourcesync.Document, u resourcesync.URL) error {
	if d.Header.Kind == resourcesync.SitemapIndex {
		return nil
	}
	mirrors, err := entryMirrors(ctx, d.Loc, u)
	if err != nil {
		return err
	}
	for _, l := range u.Links {
		if l.Rel != "contents" && l.Rel != "describedby" {
			continue
		}
		href, err := resourcesync.Resolve(ctx, d.Loc, l.Href)
		if err != nil {
			return err
		}
		s.links = append(s.links, docLink{hrefs: linkCopies(href, mirrors), metalink: l.Rel == "describedby"})
	}
	return nil
}

// saveLink copies a linked document from the first place that gives all
// of it; when none does, the error names the document as the dump links
// it, and what each place answered.
func (s *docSaver) saveLink(ctx context.Context, ln docLink) error {
	loc := ln.hrefs[0]
	if s.names[resourcesync.BaseName(loc)] == loc {
		return nil // linked from another entry too: saved already
	}
	var failed []string
	for _, href := range ln.hrefs {
		err := s.copyDoc(ctx, href, loc, ln.metalink)
		if err == nil || ctx.Err() != nil {
			return err
		}
		failed = append(failed, err.Error())
	}
	return fmt.Errorf("%s: not saved: %s", loc, strings.Join(failed, "; "))
}

// copyDoc saves the document at href under loc's name; a copy that fails
// part way is removed, never kept beside a good one.
func (s *docSaver) copyDoc(ctx context.Context, href, loc string, metalink bool) error {
	open := s.g.OpenDocument
	if metalink {
		open = s.g.OpenMetalink
	}
	rc, err := open(ctx, href)
	if err != nil {
		return err
	}
	defer rc.Close()
	f, err := s.create(loc)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, rc); err != nil {
		f.Abort()
		return err
	}
	s.files = append(s.files, savedDoc{f, filepath.Join(s.dir, resourcesync.BaseName(loc))})
	if metalink {
		return nil
	}
	return s.saveSignature(ctx, href, loc)
}

// commit renames the linked documents and parts, then the dump document,
// which was created first.
func (s *docSaver) commit() ([]string, error) {
	var saved []string
	for i := len(s.files) - 1; i >= 0; i-- {
		d := s.files[i]
		if err := d.f.Commit(); err != nil {
			return saved, err
		}
		saved = append(saved, d.path)
	}
	s.files = nil
	return saved, nil
}

func (s *docSaver) abort() {
	for _, d := range s.files {
		d.f.Abort()
	}
}
