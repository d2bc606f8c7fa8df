package transfer

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"path"
	"strings"

	"github.com/rsdump/rsdump/internal/digest"
	"github.com/rsdump/rsdump/metalink"
	"github.com/rsdump/rsdump/resourcesync"
	"github.com/rsdump/rsdump/sign"
)

// maxDocument bounds a Metalink or dump document, local or fetched: a
// million piece hashes take about 80 MB. rsdump metalink --check has the
// same bound.
const maxDocument = 256 << 20

// Resolve turns a source into files: a Metalink document (path or URL), a
// ResourceSync dump document (resourcedump.xml, changedump.xml) or a
// sitemap index of them, or a plain http(s) URL of a package (a ZIP),
// whose RFC 6249 Link and Digest headers add mirrors, a hash, or a
// Metalink. Anything else (an HTML page, a Capability List, a text file)
// is refused with an error wrapping ErrNotGettable, from its first bytes
// or its document header. A URL is told by what it answers, not by its
// name: a plain URL that answers a document is read as one.
func (g *Getter) Resolve(ctx context.Context, source string) ([]File, error) {
	if resourcesync.IsURL(source) && !documentName(source) {
		files, err := g.fromPlainURL(ctx, source)
		if err == nil && resourcesync.Trust(ctx) != nil {
			// Its Digest and Metalink came with it: nothing signed vouches
			// for it.
			return nil, fmt.Errorf("%s: a package given by its URL alone cannot be authenticated: get its signed dump document, or a .meta4 whose files carry signatures", source)
		}
		if !errors.Is(err, errDocument) {
			return files, err
		}
	}
	return g.fromDocument(ctx, source)
}

// documentName says whether a URL names a Metalink or dump document.
func documentName(u string) bool {
	switch strings.ToLower(path.Ext(urlPath(u))) {
	case ".meta4", ".metalink", ".xml":
		return true
	}
	return false
}

// fromDocument reads a Metalink or dump document, refusing anything else.
// Under a trust (resourcesync.WithTrust) a dump document is read once its
// signature verified, and a Metalink's files must each carry a signature
// (RFC 5854 4.2.13), checked over the file before it gets its name.
func (g *Getter) fromDocument(ctx context.Context, source string) ([]File, error) {
	rc, ctype, err := g.openDocument(ctx, source, true)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	br := bufio.NewReaderSize(rc, 4096)
	head, _ := br.Peek(4096)
	switch {
	case resourcesync.LooksHTML(head, ctype):
		return nil, notGettable(source, htmlPage(ctype))
	case bytes.Contains(head, []byte("<metalink")):
		files, err := filesFromMetalink(ctx, source, io.LimitReader(br, maxDocument))
		if err == nil {
			err = signedFiles(ctx, source, files)
		}
		return files, err
	case bytes.Contains(head, []byte("<urlset")), bytes.Contains(head, []byte("<sitemapindex")):
		doc, err := g.opener(false).Verify(ctx, source, br)
		if err != nil {
			return nil, err
		}
		defer doc.Close()
		files, err := g.filesFromDump(ctx, source, doc)
		if err == nil && resourcesync.IsURL(source) {
			g.mu.Lock()
			g.dumps[source] = true
			g.mu.Unlock()
		}
		return files, err
	case ctype != "":
		return nil, notGettable(source, "answers "+ctype)
	}
	return nil, notGettable(source, "neither a Metalink nor a ResourceSync document")
}

// notGettable is ErrNotGettable for src, saying what src is.
func notGettable(src, what string) error {
	return fmt.Errorf("%s: %s: %w", src, what, ErrNotGettable)
}

func htmlPage(ctype string) string {
	if ctype == "" {
		return "answers an HTML page"
	}
	return "answers an HTML page (" + ctype + ")"
}

// OpenDocument opens a Metalink or ResourceSync document, a file or a
// URL fetched with the Getter's client (resourcesync.Opener: a transient
// failure is retried), refusing one too large to be a document (a
// package given by mistake, say).
// Under a trust (resourcesync.WithTrust) it is read once its signature
// verified; OpenMetalink reads a Metalink, which needs none.
func (g *Getter) OpenDocument(ctx context.Context, loc string) (io.ReadCloser, error) {
	rc, _, err := g.openDocument(ctx, loc, false)
	return rc, err
}

// OpenMetalink is OpenDocument of a Metalink, read without a signature
// even under a trust: its mirrors and piece hashes are hints, and what
// lands is checked against the hash a signed document gives (or, for a
// Metalink given alone, against its files' own signatures).
func (g *Getter) OpenMetalink(ctx context.Context, loc string) (io.ReadCloser, error) {
	rc, _, err := g.openDocument(ctx, loc, true)
	return rc, err
}

// openDocument is OpenDocument that also returns the Content-Type a
// server gave the document ("" for a file).
func (g *Getter) openDocument(ctx context.Context, loc string, unsigned bool) (io.ReadCloser, string, error) {
	rc, h, err := g.opener(unsigned).OpenHeader(ctx, loc)
	if err != nil {
		return nil, "", err
	}
	return rc, h.Get("Content-Type"), nil
}

func (g *Getter) opener(unsigned bool) resourcesync.Opener {
	return resourcesync.Opener{Client: g.client, Accept: metalink.MediaType + ", application/xml;q=0.5, */*;q=0.1", MaxBytes: maxDocument, Unsigned: unsigned}
}

func urlPath(s string) string {
	if u, err := url.Parse(s); err == nil {
		return u.Path
	}
	return s
}

// filesFromDump lists the packages of a dump document read from r, and of
// every part when it is an index (pack writes one past 50,000 packages).
func (g *Getter) filesFromDump(ctx context.Context, src string, r io.Reader) ([]File, error) {
	var files []File
	l := resourcesync.Loader{
		Open: g.OpenDocument,
		Document: func(d *resourcesync.Document) error {
			if d.Index == nil && !resourcesync.IsDump(d.Header) {
				return notGettable(src, capabilityName(d.Header.MD.Capability))
			}
			return nil
		},
		Entry: func(d *resourcesync.Document, _ int, u resourcesync.URL) error {
			if d.Header.Kind == resourcesync.SitemapIndex {
				return nil
			}
			f, err := g.FileFromEntry(ctx, d.Loc, u)
			var re *resourcesync.RefError
			switch {
			case errors.As(err, &re):
				return err // it names the document
			case err != nil:
				return fmt.Errorf("%s: %w", d.Loc, err)
			}
			files = append(files, f)
			return nil
		},
	}
	if err := l.Read(ctx, src, r, nil); err != nil {
		return nil, err
	}
	return files, nil
}

// capabilityName names a document by its capability, for an error.
func capabilityName(c string) string {
	switch c {
	case resourcesync.CapCapabilityList:
		return "a Capability List"
	case resourcesync.CapDescription:
		return "a Source Description"
	case resourcesync.CapResourceList:
		return "a Resource List"
	case resourcesync.CapChangeList:
		return "a Change List"
	case resourcesync.CapResourceDumpManifest, resourcesync.CapChangeDumpManifest:
		return "a package manifest"
	}
	return fmt.Sprintf("a document of capability %q", c)
}

// filesFromMetalink lists the files of the Metalink at src, read from r.
func filesFromMetalink(ctx context.Context, src string, r io.Reader) ([]File, error) {
	ml, _, err := metalink.Decode(r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", src, err)
	}
	var files []File
	for _, mf := range ml.Files {
		f, err := fileFromMetalink(mf)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", src, err)
		}
		for _, u := range mf.URLs {
			loc, err := mirrorRef(ctx, src, u.URL)
			if err != nil {
				return nil, err // names src
			}
			if loc != "" {
				f.Mirrors = append(f.Mirrors, Mirror{URL: loc, Priority: u.Priority, Location: u.Location})
			}
		}
		files = append(files, f)
	}
	return files, nil
}

// mirrorRef is the URL of a mirror the document at doc names, as
// resourcesync.Ref allows it, or "" for one rsdump does not read (ftp,
// rsync; in a local document, anything but a URL).
func mirrorRef(ctx context.Context, doc, ref string) (string, error) {
	loc, err := resourcesync.Ref(ctx, doc, ref)
	if errors.Is(err, resourcesync.ErrScheme) || err == nil && !resourcesync.IsURL(loc) {
		return "", nil
	}
	return loc, err
}

func fileFromMetalink(mf metalink.File) (File, error) {
	f := File{Name: mf.Name, Size: -1}
	if mf.Size == nil {
		return f, fmt.Errorf("%s: no size", mf.Name)
	}
	f.Size = *mf.Size
	if h, ok := mf.StrongestHash(); ok {
		f.HashAlg, f.Hash = h.Type, h.Value
	}
	if p, ok := mf.StrongestPieces(); ok {
		f.Pieces = Pieces{Type: p.Type, Length: p.Length, Hashes: p.Hashes}
	}
	f.Unverifiable = mf.UnverifiableHashes()
	if sig := mf.Signature; sig != nil && strings.EqualFold(sig.MediaType, sign.MediaType) {
		f.signature = []byte(strings.TrimSpace(sig.Value) + "\n")
	}
	return f, nil
}

// FileFromEntry turns a dump document's entry for a package into a File:
// its <loc> (resolved against the document at doc) and rel="duplicate"
// links are mirrors, rs:md gives length and hash, and a rel="describedby"
// Metalink adds piece hashes and its own mirrors. A reference the document
// may not make (resourcesync.Ref) is an error naming it, before anything
// is fetched.
func (g *Getter) FileFromEntry(ctx context.Context, doc string, u resourcesync.URL) (File, error) {
	mirrors, err := entryMirrors(ctx, doc, u)
	if err != nil {
		return File{}, err
	}
	f := File{Name: resourcesync.BaseName(mirrors[0].URL), Size: -1, Mirrors: mirrors}
	if u.MD != nil && u.MD.Length != nil {
		f.Size = *u.MD.Length
	}
	if resourcesync.Trust(ctx) != nil && (u.MD == nil || !knownHash(u.MD.Hash)) {
		return f, fmt.Errorf("%s: the signed dump document gives the package no hash rsdump computes, so it cannot be authenticated", u.Loc)
	}
	if u.MD != nil && u.MD.Hash != "" {
		set, err := digest.Parse(u.MD.Hash)
		if err != nil {
			return f, fmt.Errorf("%s: %w", u.Loc, err)
		}
		if s, ok := set.Strongest(); ok {
			f.HashAlg, f.Hash = s.Alg, s.Hex
		} else {
			f.Unverifiable = set.Algs()
		}
	}
	for _, l := range u.Links {
		if l.Rel != "describedby" || l.Type != metalink.MediaType {
			continue
		}
		href, err := resolveHref(ctx, doc, l.Href)
		if err != nil {
			return f, err
		}
		if err := g.mergeMetalink(ctx, &f, linkCopies(href, mirrors)); err != nil {
			return f, err
		}
	}
	if f.Size < 0 {
		return f, fmt.Errorf("%s: no length", u.Loc)
	}
	return f, nil
}

// resolveHref resolves a link of a remote document (resourcesync.Resolve);
// a local document's links are used as they are, since its Metalinks live
// on the Source's servers.
func resolveHref(ctx context.Context, doc, href string) (string, error) {
	if resourcesync.IsURL(doc) {
		return resourcesync.Resolve(ctx, doc, href)
	}
	return href, nil
}

// entryMirrors lists where a dump entry's package is served: its <loc>,
// resolved against a remote document, then its rel="duplicate" links.
func entryMirrors(ctx context.Context, doc string, u resourcesync.URL) ([]Mirror, error) {
	loc, err := resolveHref(ctx, doc, u.Loc)
	if err != nil {
		return nil, err
	}
	mirrors := []Mirror{{URL: loc}}
	for _, l := range u.Links {
		if l.Rel != "duplicate" {
			continue
		}
		href, err := mirrorRef(ctx, doc, l.Href)
		if err != nil {
			return nil, err
		}
		if href != "" {
			mirrors = append(mirrors, Mirror{URL: href, Priority: l.Pri})
		}
	}
	return mirrors, nil
}

// LinkCopies lists where the document at href, which the entry u of the
// dump document doc links to (its detached manifest, its Metalink), may be
// read: at href, then at the same name beside each of the package's other
// mirrors.
func LinkCopies(ctx context.Context, doc string, u resourcesync.URL, href string) ([]string, error) {
	mirrors, err := entryMirrors(ctx, doc, u)
	if err != nil {
		return nil, err
	}
	return linkCopies(href, mirrors), nil
}

// linkCopies lists where a document linked from a package's entry may be
// read: at href, and, when it sits beside the package's first mirror (pack
// writes NAME.meta4 and NAME.manifest.xml beside NAME), at the same name
// beside every other mirror, so that a dead <loc> host does not cost it.
func linkCopies(href string, mirrors []Mirror) []string {
	hrefs := []string{href}
	dir := mirrors[0].URL[:strings.LastIndex(mirrors[0].URL, "/")+1]
	rest, ok := strings.CutPrefix(href, dir)
	if !ok || strings.Contains(rest, "/") {
		return hrefs
	}
	for _, m := range mirrors[1:] {
		hrefs = append(hrefs, m.URL[:strings.LastIndex(m.URL, "/")+1]+rest)
	}
	return hrefs
}

// mergeMetalink takes piece hashes, a hash and mirrors from the Metalink
// describing f, read from the first of hrefs that answers; its file is the
// one with f's name, or its only file. When none answers, f goes on
// without piece hashes if the dump gave its length and hash.
func (g *Getter) mergeMetalink(ctx context.Context, f *File, hrefs []string) error {
	var rc io.ReadCloser
	var href string
	var err error
	for _, href = range hrefs {
		if rc, err = g.OpenMetalink(ctx, href); err == nil {
			break
		}
	}
	if err != nil {
		if f.Size >= 0 && f.HashAlg != "" && ctx.Err() == nil {
			return nil
		}
		return err
	}
	defer rc.Close()
	files, err := filesFromMetalink(ctx, href, io.LimitReader(rc, maxDocument))
	if err != nil {
		return err
	}
	var m *File
	for i := range files {
		if files[i].Name == f.Name || len(files) == 1 {
			m = &files[i]
		}
	}
	if m == nil {
		return fmt.Errorf("%s: no file named %q", href, f.Name)
	}
	if f.Size >= 0 && m.Size != f.Size {
		return fmt.Errorf("%s: size %d, the dump says %d", href, m.Size, f.Size)
	}
	if m.HashAlg != "" && m.HashAlg == f.HashAlg && m.Hash != f.Hash {
		return fmt.Errorf("%s: %s %s, the dump says %s", href, m.HashAlg, m.Hash, f.Hash)
	}
	f.Size, f.Pieces = m.Size, m.Pieces
	if resourcesync.Trust(ctx) != nil {
		// The dump document is signed and the Metalink is not: its hash
		// never replaces the document's. Its piece hashes only find a bad
		// mirror early; the whole file is checked against the document's.
		f.Mirrors = append(f.Mirrors, m.Mirrors...)
		return nil
	}
	if m.HashAlg != "" && (f.HashAlg == "" || digest.Rank(m.HashAlg) < digest.Rank(f.HashAlg)) {
		f.HashAlg, f.Hash = m.HashAlg, m.Hash // the stronger of the two
	}
	if f.HashAlg != "" || f.Pieces.Hashes != nil {
		f.Unverifiable = nil
	} else {
		f.Unverifiable = append(f.Unverifiable, m.Unverifiable...)
	}
	f.Mirrors = append(f.Mirrors, m.Mirrors...)
	return nil
}

// signedFiles, under a trust (resourcesync.WithTrust), has every file of
// a Metalink given alone checked against its own signature (RFC 5854
// 4.2.13, application/pgp-signature) before it gets its name: the Metalink
// itself is signed by nothing, so its hashes vouch for nothing. A file
// without such a signature is refused before anything is fetched.
func signedFiles(ctx context.Context, src string, files []File) error {
	k := resourcesync.Trust(ctx)
	if k == nil {
		return nil
	}
	for i := range files {
		sig := files[i].signature
		if sig == nil {
			return fmt.Errorf("%s: %s: the Metalink gives it no OpenPGP signature (%s), so it cannot be authenticated", src, files[i].Name, sign.MediaType)
		}
		name := files[i].Name
		files[i].Authenticate = func(r io.Reader) error {
			if _, err := k.Verify(r, sig); err != nil {
				var se *sign.Error
				if errors.As(err, &se) {
					return se.For(name + " (its signature in " + src + ")")
				}
				return err
			}
			return nil
		}
	}
	return nil
}

// knownHash reports whether the hash attribute attr holds a hash rsdump
// computes.
func knownHash(attr string) bool {
	set, err := digest.Parse(attr)
	_, ok := set.Strongest()
	return err == nil && ok
}
