package transfer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path"
	"strings"

	"github.com/rsdump/rsdump/metalink"
	"github.com/rsdump/rsdump/metalink/httpheader"
	"github.com/rsdump/rsdump/resourcesync"
)

// errDocument is a plain URL that answers a document: Resolve reads it
// as one.
var errDocument = errors.New("answers a document")

// sniffLength is how much of a plain URL's answer tells what it is, as
// for http.DetectContentType.
const sniffLength = 512

// fromPlainURL probes a URL (RFC 6249): the first server's Link headers
// give mirrors (rel=duplicate) and a Metalink (rel=describedby), its
// Digest header the whole-file hash. Headers of the servers it redirects
// to are mirrors' headers and are ignored, as §6 requires. Its first
// bytes must be a package's (a ZIP): an HTML page or anything else is
// refused, and a document is errDocument.
func (g *Getter) fromPlainURL(ctx context.Context, src string) ([]File, error) {
	p, err := g.probe(ctx, src)
	if err != nil {
		return nil, err
	}
	if err := sniff(src, p); err != nil {
		return nil, err
	}
	f := File{Name: path.Base(urlPath(src)), Size: p.size, Mirrors: []Mirror{{URL: p.final}}}
	if p.final != src {
		f.Mirrors = append(f.Mirrors, Mirror{URL: src})
	}
	first := p.first
	f.HashAlg, f.Hash = httpheader.ParseDigest(append(first.Values("Digest"), first.Values("Repr-Digest")...))
	var describedBy string
	for _, l := range httpheader.ParseLinks(first.Values("Link"), src) {
		switch {
		case l.Has(httpheader.RelDuplicate):
			f.Mirrors = append(f.Mirrors, Mirror{URL: l.URL, Priority: l.Pri, Location: l.Geo, Pref: l.Pref})
		case l.Has(httpheader.RelDescribedBy) && l.Type == metalink.MediaType && describedBy == "":
			describedBy = l.URL
		}
	}
	if describedBy != "" {
		if err := g.mergeMetalink(ctx, &f, []string{describedBy}); err != nil {
			return nil, err
		}
	}
	if f.Size < 0 {
		return nil, fmt.Errorf("%s: the server gives no size", src)
	}
	return []File{f}, nil
}

// sniff tells a package from what is not one by the first bytes of the
// answer: a ZIP starts with a local file header, or, empty, with its end
// record; the bytes decide, whatever the Content-Type says.
func sniff(src string, p probed) error {
	switch {
	case bytes.HasPrefix(p.head, []byte("PK\x03\x04")), bytes.HasPrefix(p.head, []byte("PK\x05\x06")):
		return nil
	case resourcesync.LooksHTML(p.head, p.ctype):
		return notGettable(src, htmlPage(p.ctype))
	case resourcesync.LooksXML(p.head):
		return errDocument
	case p.ctype != "":
		return notGettable(src, "answers "+p.ctype)
	}
	return notGettable(src, "answers no Content-Type, and is not a ZIP")
}

// probed is what the probe of a plain URL learned.
type probed struct {
	first http.Header // the first server's headers
	size  int64       // -1 when not given
	final string      // the URL that answered, after redirects
	ctype string      // its Content-Type
	head  []byte      // its first bytes, up to sniffLength
}

// probe asks for the first bytes, following redirects by hand so that the
// first response's headers can be told from a mirror's.
func (g *Getter) probe(ctx context.Context, src string) (probed, error) {
	c := *g.client
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	var p probed
	u := src
	for range 10 {
		resp, head, err := probeOnce(ctx, &c, u)
		if err != nil {
			return p, err
		}
		if p.first == nil {
			p.first = resp.Header
		}
		p.final, p.ctype, p.head = u, resp.Header.Get("Content-Type"), head
		loc := resp.Header.Get("Location")
		switch {
		case resp.StatusCode >= 300 && resp.StatusCode < 400 && loc != "":
			next, err := url.Parse(u)
			if err == nil {
				next, err = next.Parse(loc)
			}
			if err != nil {
				return p, fmt.Errorf("%s: bad redirect: %w", u, err)
			}
			if err := checkRedirect(resp.Request.URL, next); err != nil {
				return p, err
			}
			u = next.String()
			continue
		case resp.StatusCode == http.StatusPartialContent:
			_, _, total, ok := parseContentRange(resp.Header.Get("Content-Range"))
			if p.size = total; !ok {
				p.size = -1
			}
			return p, nil
		case resp.StatusCode == http.StatusOK:
			p.size = resp.ContentLength
			return p, nil
		}
		return p, &StatusError{URL: u, Status: resp.StatusCode}
	}
	return p, fmt.Errorf("%s: too many redirects", src)
}

// probeOnce asks u for its first sniffLength bytes and reads them, and no
// more: a server ignoring Range sends it all.
func probeOnce(ctx context.Context, c *http.Client, u string) (*http.Response, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Range", fmt.Sprintf("bytes=0-%d", sniffLength-1))
	req.Header.Set("Accept-Encoding", "identity")
	req.Header.Set("Want-Digest", "SHA-256, SHA-512;q=0.5")
	req.Header.Set("Want-Repr-Digest", "sha-256=5, sha-512=3")
	resp, err := c.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	var head []byte
	if resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusPartialContent {
		head, err = io.ReadAll(io.LimitReader(resp.Body, sniffLength))
		if err != nil && !strings.Contains(err.Error(), u) {
			err = fmt.Errorf("%s: %w", u, err)
		}
		if err != nil {
			return nil, nil, err
		}
	}
	return resp, head, nil
}
