package transfer

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"path"

	"github.com/rsdump/rsdump/metalink"
	"github.com/rsdump/rsdump/metalink/httpheader"
)

// fromPlainURL probes a URL (RFC 6249): the first server's Link headers
// give mirrors (rel=duplicate) and a Metalink (rel=describedby), its
// Digest header the whole-file hash. Headers of the servers it redirects
// to are mirrors' headers and are ignored, as §6 requires.
func (g *Getter) fromPlainURL(ctx context.Context, src string) ([]File, error) {
	first, size, final, err := g.probe(ctx, src)
	if err != nil {
		return nil, err
	}
	f := File{Name: path.Base(urlPath(src)), Size: size, Mirrors: []Mirror{{URL: final}}}
	if final != src {
		f.Mirrors = append(f.Mirrors, Mirror{URL: src})
	}
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

// probe asks for the first byte, following redirects by hand so that the
// first response's headers can be told from a mirror's.
func (g *Getter) probe(ctx context.Context, src string) (http.Header, int64, string, error) {
	c := *g.client
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	var first http.Header
	u := src
	for range 10 {
		resp, err := probeOnce(ctx, &c, u)
		if err != nil {
			return nil, 0, "", err
		}
		if first == nil {
			first = resp.Header
		}
		loc := resp.Header.Get("Location")
		switch {
		case resp.StatusCode >= 300 && resp.StatusCode < 400 && loc != "":
			next, err := url.Parse(u)
			if err == nil {
				next, err = next.Parse(loc)
			}
			if err != nil {
				return nil, 0, "", fmt.Errorf("%s: bad redirect: %w", u, err)
			}
			if err := checkRedirect(resp.Request.URL, next); err != nil {
				return nil, 0, "", err
			}
			u = next.String()
			continue
		case resp.StatusCode == http.StatusPartialContent:
			_, _, total, ok := parseContentRange(resp.Header.Get("Content-Range"))
			if !ok {
				total = -1
			}
			return first, total, u, nil
		case resp.StatusCode == http.StatusOK:
			return first, resp.ContentLength, u, nil
		}
		return nil, 0, "", &StatusError{URL: u, Status: resp.StatusCode}
	}
	return nil, 0, "", fmt.Errorf("%s: too many redirects", src)
}

func probeOnce(ctx context.Context, c *http.Client, u string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Range", "bytes=0-0")
	req.Header.Set("Accept-Encoding", "identity")
	req.Header.Set("Want-Digest", "SHA-256, SHA-512;q=0.5")
	req.Header.Set("Want-Repr-Digest", "sha-256=5, sha-512=3")
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	resp.Body.Close() // a server ignoring Range sends it all: do not read it
	return resp, nil
}
