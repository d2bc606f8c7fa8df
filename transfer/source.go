package transfer

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path"
	"strings"

	"github.com/rsdump/rsdump/internal/digest"
	"github.com/rsdump/rsdump/metalink"
	"github.com/rsdump/rsdump/resourcesync"
)

// maxDocument bounds a Metalink or dump document fetched over HTTP.
const maxDocument = 64 << 20

// Resolve turns a source into files: a Metalink document (path or URL), a
// ResourceSync dump document (resourcedump.xml, changedump.xml) or a
// sitemap index of them, or a
// plain http(s) URL, whose RFC 6249 Link and Digest headers add mirrors,
// a hash, or a Metalink.
func (g *Getter) Resolve(ctx context.Context, source string) ([]File, error) {
	if !isURL(source) {
		b, err := readDoc(source)
		if err != nil {
			return nil, err
		}
		return g.fromDocument(ctx, source, b)
	}
	switch strings.ToLower(path.Ext(urlPath(source))) {
	case ".meta4", ".metalink", ".xml":
		b, err := g.fetchDoc(ctx, source)
		if err != nil {
			return nil, err
		}
		return g.fromDocument(ctx, source, b)
	}
	return g.fromPlainURL(ctx, source)
}

// readDoc reads a local document, refusing one too large to be one (a
// package given by mistake, say) before reading it into memory.
func readDoc(path string) ([]byte, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if fi.Size() > maxDocument {
		return nil, fmt.Errorf("%s: %d bytes: too large for a Metalink or dump document", path, fi.Size())
	}
	return os.ReadFile(path)
}

func isURL(s string) bool {
	return strings.HasPrefix(s, "http://") || strings.HasPrefix(s, "https://")
}

func urlPath(s string) string {
	if u, err := url.Parse(s); err == nil {
		return u.Path
	}
	return s
}

// fromDocument sniffs the root element: Metalink, or a sitemap urlset.
func (g *Getter) fromDocument(ctx context.Context, src string, b []byte) ([]File, error) {
	head := b[:min(len(b), 4096)]
	switch {
	case bytes.Contains(head, []byte("<metalink")):
		return filesFromMetalink(src, b)
	case bytes.Contains(head, []byte("<urlset")):
		return g.filesFromDump(ctx, src, b)
	case bytes.Contains(head, []byte("<sitemapindex")):
		return g.filesFromIndex(ctx, src, b)
	}
	return nil, fmt.Errorf("%s: neither a Metalink nor a ResourceSync dump document", src)
}

// filesFromIndex follows a dump's sitemap index (pack writes one past
// 50,000 packages): each document it lists is fetched and read as a dump
// document. An index listing an index is refused, as the sitemap protocol
// (and ResourceSync §5.2) allow only one level.
func (g *Getter) filesFromIndex(ctx context.Context, src string, b []byte) ([]File, error) {
	dec, err := resourcesync.NewDecoder(bufio.NewReader(bytes.NewReader(b)))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", src, err)
	}
	var locs []string
	if err := dec.Each(func(u resourcesync.URL) error { locs = append(locs, u.Loc); return nil }); err != nil {
		return nil, fmt.Errorf("%s: %w", src, err)
	}
	var files []File
	for _, loc := range locs {
		if !isURL(loc) {
			return nil, fmt.Errorf("%s: %s: not an http(s) URL", src, loc)
		}
		doc, err := g.fetchDoc(ctx, loc)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", src, err)
		}
		if !bytes.Contains(doc[:min(len(doc), 4096)], []byte("<urlset")) {
			return nil, fmt.Errorf("%s: %s: not a dump document (an index may not list an index)", src, loc)
		}
		fs, err := g.filesFromDump(ctx, loc, doc)
		if err != nil {
			return nil, err
		}
		files = append(files, fs...)
	}
	return files, nil
}

func (g *Getter) fetchDoc(ctx context.Context, u string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	resp, err := g.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, &StatusError{URL: u, Status: resp.StatusCode}
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxDocument+1))
	if err == nil && len(b) > maxDocument {
		err = errors.New("document too large")
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", u, err)
	}
	return b, nil
}

func filesFromMetalink(src string, b []byte) ([]File, error) {
	ml, _, err := metalink.Decode(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", src, err)
	}
	var files []File
	for _, mf := range ml.Files {
		f, err := fileFromMetalink(mf)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", src, err)
		}
		files = append(files, f)
	}
	return files, nil
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
	for _, u := range mf.URLs {
		if isURL(u.URL) {
			f.Mirrors = append(f.Mirrors, Mirror{URL: u.URL, Priority: u.Priority, Location: u.Location})
		}
	}
	return f, nil
}

// filesFromDump lists a dump document's packages: <loc> and its
// rel="duplicate" links are mirrors, rs:md gives length and hash, and a
// rel="describedby" Metalink adds piece hashes and its own mirrors.
func (g *Getter) filesFromDump(ctx context.Context, src string, b []byte) ([]File, error) {
	dec, err := resourcesync.NewDecoder(bufio.NewReader(bytes.NewReader(b)))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", src, err)
	}
	var files []File
	err = dec.Each(func(u resourcesync.URL) error {
		f, err := g.fileFromEntry(ctx, u)
		files = append(files, f)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", src, err)
	}
	return files, nil
}

func (g *Getter) fileFromEntry(ctx context.Context, u resourcesync.URL) (File, error) {
	f := File{Name: path.Base(urlPath(u.Loc)), Size: -1, Mirrors: []Mirror{{URL: u.Loc}}}
	if u.MD != nil && u.MD.Length != nil {
		f.Size = *u.MD.Length
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
		switch {
		case l.Rel == "duplicate" && isURL(l.Href):
			f.Mirrors = append(f.Mirrors, Mirror{URL: l.Href, Priority: l.Pri})
		case l.Rel == "describedby" && l.Type == metalink.MediaType:
			if err := g.mergeMetalink(ctx, &f, l.Href); err != nil {
				return f, err
			}
		}
	}
	if f.Size < 0 {
		return f, fmt.Errorf("%s: no length", u.Loc)
	}
	return f, nil
}

// mergeMetalink takes piece hashes, a hash and mirrors from the Metalink
// describing f; its file is the one with f's name, or its only file.
func (g *Getter) mergeMetalink(ctx context.Context, f *File, href string) error {
	b, err := g.fetchDoc(ctx, href)
	if err != nil {
		return err
	}
	files, err := filesFromMetalink(href, b)
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
