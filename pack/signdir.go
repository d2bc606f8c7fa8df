package pack

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/rsdump/rsdump/internal/atomic"
	"github.com/rsdump/rsdump/metalink"
	"github.com/rsdump/rsdump/resourcesync"
	"github.com/rsdump/rsdump/sign"
)

// SignResult is what SignDir signed.
type SignResult struct {
	Documents []string `json:"documents"` // each got NAME.asc
	Metalinks []string `json:"metalinks"` // each file of each got a <signature>
}

// SignDir signs the ResourceSync documents and Metalinks in dir that some
// tool wrote (resync-build, a pack run without a signer): every document,
// told by its content (a sitemap <urlset> or <sitemapindex>, whatever its
// name), gets its armored detached signature NAME.asc beside it, and every
// file of a .meta4 whose bytes are beside it (its name, relative to the
// Metalink's directory) a <signature> (RFC 5854 4.2.13), the Metalink being
// written again. Directories whose name starts with a dot are skipped but
// .well-known (the Source Description). Each file is replaced atomically.
func SignDir(ctx context.Context, dir string, s *sign.Signer) (*SignResult, error) {
	res := &SignResult{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if d.IsDir() {
			if p != dir && strings.HasPrefix(d.Name(), ".") && d.Name() != ".well-known" {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() || strings.HasSuffix(p, sign.Suffix) {
			return nil
		}
		if strings.EqualFold(filepath.Ext(p), ".meta4") {
			if err := signMetalink(p, s); err != nil {
				return err
			}
			res.Metalinks = append(res.Metalinks, p)
			return nil
		}
		ok, err := isSitemap(p)
		if err != nil || !ok {
			return err
		}
		if err := signFile(p, s); err != nil {
			return err
		}
		res.Documents = append(res.Documents, p)
		return nil
	})
	return res, err
}

// isSitemap says whether the file at p is a sitemap document, by its
// content: it starts with markup, and its root element and header read as
// a <urlset> or <sitemapindex>'s (the decoder stops at the first entry).
func isSitemap(p string) (bool, error) {
	f, err := os.Open(p)
	if err != nil {
		return false, err
	}
	defer f.Close()
	br := bufio.NewReader(f)
	head, _ := br.Peek(512)
	if !resourcesync.LooksXML(head) {
		return false, nil
	}
	_, err = resourcesync.NewDecoder(io.LimitReader(br, resourcesync.MaxBytes))
	return err == nil, nil
}

// signFile writes the signature of the file at p beside it.
func signFile(p string, s *sign.Signer) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	sig, err := s.Sign(bufio.NewReaderSize(f, 1<<20))
	if err != nil {
		return fmt.Errorf("%s: %w", p, err)
	}
	return atomic.WriteFile(p+sign.Suffix, sig, 0o644)
}

// signMetalink adds to every file of the Metalink at p whose bytes are
// beside it a signature of them, and writes the Metalink again. A file
// whose bytes are not there is an error naming it: a signature of
// something else would never verify.
func signMetalink(p string, s *sign.Signer) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	m, _, err := metalink.Decode(f)
	f.Close()
	if err != nil {
		return fmt.Errorf("%s: %w", p, err)
	}
	for i := range m.Files {
		name := path.Clean(m.Files[i].Name)
		if !filepath.IsLocal(filepath.FromSlash(name)) {
			return fmt.Errorf("%s: file %q: not a name beside the Metalink", p, m.Files[i].Name)
		}
		data := filepath.Join(filepath.Dir(p), filepath.FromSlash(name))
		df, err := os.Open(data)
		if err != nil {
			return fmt.Errorf("%s: file %q: %w", p, m.Files[i].Name, err)
		}
		sig, err := s.Sign(bufio.NewReaderSize(df, 1<<20))
		df.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", data, err)
		}
		m.Files[i].Signature = &metalink.Signature{MediaType: sign.MediaType, Value: string(sig)}
	}
	var b bytes.Buffer
	if err := metalink.Encode(&b, m); err != nil {
		return fmt.Errorf("%s: %w", p, err)
	}
	return atomic.WriteFile(p, b.Bytes(), 0o644)
}
