package transfer

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/rsdump/rsdump/internal/atomic"
	"github.com/rsdump/rsdump/resourcesync"
)

// SaveDocuments saves the documents of the dump at source, a URL, into
// dir under the names a local copy of a dump uses (the last segment of
// each URL, as resourcesync.Resolve reads them): the dump document, the
// parts of an index, and each package's detached manifest (rel="contents")
// and Metalink (rel="describedby"). With the packages Get saved beside
// them, dir then verifies and unpacks as the published dump does. Every
// document is read in full before any is given its final name, and the
// dump document is renamed last. A source that is not a ResourceSync
// document (a Metalink, a plain URL, a local file) saves nothing.
func (g *Getter) SaveDocuments(ctx context.Context, dir, source string) ([]string, error) {
	if !isURL(source) || !g.isDump(ctx, source) {
		return nil, nil
	}
	root, err := openRoot(dir) // as Get: nothing is written outside dir
	if err != nil {
		return nil, err
	}
	defer root.Close()
	s := &docSaver{g: g, dir: dir, root: root, names: map[string]string{}}
	defer s.abort()
	l := resourcesync.Loader{Open: s.open, Entry: s.entry}
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

// isDump reports whether the document at loc is a ResourceSync <urlset>
// or <sitemapindex> rather than a Metalink.
func (g *Getter) isDump(ctx context.Context, loc string) bool {
	if ext := strings.ToLower(path.Ext(urlPath(loc))); ext != ".xml" {
		return false
	}
	rc, err := g.OpenDocument(ctx, loc)
	if err != nil {
		return false
	}
	defer rc.Close()
	head, _ := bufio.NewReaderSize(rc, 4096).Peek(4096)
	return bytes.Contains(head, []byte("<urlset")) || bytes.Contains(head, []byte("<sitemapindex"))
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
type docLink struct{ hrefs []string }

// open is the Loader's OpenFunc: it fetches a document, copying every
// byte it reads, and all of it, to a temporary file.
func (s *docSaver) open(ctx context.Context, loc string) (io.ReadCloser, error) {
	f, err := s.create(loc)
	if err != nil {
		return nil, err
	}
	rc, err := s.g.OpenDocument(ctx, loc)
	if err != nil {
		return nil, err
	}
	return &teeDoc{rc: rc, f: f, r: io.TeeReader(rc, f)}, nil
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
	p := filepath.Join(s.dir, name)
	f, err := atomic.CreateIn(s.root, name, 0o644)
	if err != nil {
		return nil, err
	}
	s.files = append(s.files, savedDoc{f, p})
	return f, nil
}

// teeDoc copies a document to its temporary file as the decoder reads
// it, and on Close the rest of it, which the decoder leaves unread after
// the root element, so that the copy is byte for byte the document.
type teeDoc struct {
	rc io.ReadCloser
	f  *atomic.File
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
func (s *docSaver) entry(d *resourcesync.Document, _ int, u resourcesync.URL) error {
	if d.Header.Kind == resourcesync.SitemapIndex {
		return nil
	}
	mirrors := entryMirrors(d.Loc, u)
	for _, l := range u.Links {
		if l.Rel == "contents" || l.Rel == "describedby" {
			s.links = append(s.links, docLink{hrefs: linkCopies(resourcesync.Resolve(d.Loc, l.Href), mirrors)})
		}
	}
	return nil
}

// saveLink copies a linked document from the first place that answers.
func (s *docSaver) saveLink(ctx context.Context, ln docLink) error {
	if s.names[resourcesync.BaseName(ln.hrefs[0])] == ln.hrefs[0] {
		return nil // linked from another entry too: saved already
	}
	var err error
	for _, href := range ln.hrefs {
		var rc io.ReadCloser
		if rc, err = s.g.OpenDocument(ctx, href); err != nil {
			continue
		}
		err = s.copyDoc(rc, ln.hrefs[0])
		rc.Close()
		if err == nil || ctx.Err() != nil {
			return err
		}
	}
	return err
}

func (s *docSaver) copyDoc(r io.Reader, loc string) error {
	f, err := s.create(loc)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, r); err != nil {
		return fmt.Errorf("%s: %w", loc, err)
	}
	return nil
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
