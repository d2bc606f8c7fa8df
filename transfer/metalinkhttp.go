package transfer

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"

	"github.com/rsdump/rsdump/internal/digest"
	"github.com/rsdump/rsdump/metalink"
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
	f.HashAlg, f.Hash = parseDigest(append(first.Values("Digest"), first.Values("Repr-Digest")...))
	var describedBy string
	for _, l := range parseLinks(first.Values("Link"), src) {
		switch {
		case l.rel["duplicate"]:
			f.Mirrors = append(f.Mirrors, Mirror{URL: l.url, Priority: l.pri, Location: l.geo, Pref: l.pref})
		case l.rel["describedby"] && l.typ == metalink.MediaType && describedBy == "":
			describedBy = l.url
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

// parseDigest reads RFC 3230 instance digests ("SHA-256=base64") and
// RFC 9530 Repr-Digest ("sha-256=:base64:"), returning the strongest one
// the digest registry computes.
func parseDigest(values []string) (string, string) {
	found := map[string]string{}
	for _, v := range values {
		for _, part := range strings.Split(v, ",") {
			alg, val, ok := strings.Cut(strings.TrimSpace(part), "=")
			if !ok {
				continue
			}
			raw, err := base64.StdEncoding.DecodeString(strings.Trim(strings.TrimSpace(val), ":"))
			if strings.EqualFold(alg, "sha") {
				alg = digest.SHA1 // RFC 3230's name for it
			}
			if alg, ok := digest.Canonical(alg); ok && err == nil && len(raw)*2 == digest.HexLen(alg) {
				found[alg] = hex.EncodeToString(raw)
			}
		}
	}
	for _, alg := range digest.Strongest() {
		if v, ok := found[alg]; ok {
			return alg, v
		}
	}
	return "", ""
}

type link struct {
	url  string
	rel  map[string]bool
	typ  string
	geo  string
	pri  int
	pref bool
}

// parseLinks reads RFC 5988 Link header values, resolving each target
// against base.
func parseLinks(values []string, base string) []link {
	b, _ := url.Parse(base)
	var out []link
	for _, v := range values {
		for _, raw := range splitLinks(v) {
			if l, ok := parseLink(raw, b); ok {
				out = append(out, l)
			}
		}
	}
	return out
}

// splitLinks splits a header value at commas outside <> and quotes.
func splitLinks(v string) []string {
	var out []string
	inURL, inQuote, start := false, false, 0
	for i := 0; i < len(v); i++ {
		switch c := v[i]; {
		case c == '"' && !inURL:
			inQuote = !inQuote
		case c == '<' && !inQuote:
			inURL = true
		case c == '>' && !inQuote:
			inURL = false
		case c == ',' && !inURL && !inQuote:
			out = append(out, v[start:i])
			start = i + 1
		}
	}
	return append(out, v[start:])
}

func parseLink(raw string, base *url.URL) (link, bool) {
	raw = strings.TrimSpace(raw)
	end := strings.IndexByte(raw, '>')
	if !strings.HasPrefix(raw, "<") || end < 0 {
		return link{}, false
	}
	target, err := base.Parse(raw[1:end])
	if err != nil || (target.Scheme != "http" && target.Scheme != "https") {
		return link{}, false
	}
	l := link{url: target.String(), rel: map[string]bool{}}
	for _, p := range strings.Split(raw[end+1:], ";") {
		k, v, _ := strings.Cut(strings.TrimSpace(p), "=")
		v = strings.Trim(strings.TrimSpace(v), `"`)
		switch strings.ToLower(strings.TrimSpace(k)) {
		case "rel":
			for _, r := range strings.Fields(strings.ToLower(v)) {
				l.rel[r] = true
			}
		case "type":
			l.typ = strings.ToLower(v)
		case "geo":
			l.geo = strings.ToLower(v)
		case "pri":
			l.pri, _ = strconv.Atoi(v)
		case "pref":
			l.pref = true
		}
	}
	return l, true
}
