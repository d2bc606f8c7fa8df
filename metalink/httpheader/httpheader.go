// Package httpheader writes and reads the HTTP header fields of
// Metalink/HTTP (RFC 6249): Link fields naming a resource's mirrors
// (rel=duplicate) and its Metalink (rel=describedby), and the instance
// digest of RFC 3230 (Digest: SHA-256=base64) or RFC 9530 (Repr-Digest).
// The server side (serve) formats with it and the client side (transfer)
// parses with it, so the two cannot drift apart.
package httpheader

import (
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/rsdump/rsdump/internal/digest"
)

// Relations of RFC 6249.
const (
	RelDuplicate   = "duplicate"
	RelDescribedBy = "describedby"
)

// Link is one RFC 8288 link of a Link header field, with the parameters
// RFC 6249 gives mirrors.
type Link struct {
	URL  string
	Rel  []string // lower case; a field may name several
	Type string   // media type, lower case
	Geo  string   // ISO 3166-1 alpha-2, lower case
	Pri  int      // 1..999999; 0 = absent
	Pref bool     // a preferred mirror (RFC 6249 §3.3)
}

// Has reports whether the link has relation rel.
func (l Link) Has(rel string) bool {
	for _, r := range l.Rel {
		if r == rel {
			return true
		}
	}
	return false
}

// String formats the link as one Link field value. The target is written
// as given: it must already be a valid URI reference (no '>' in it).
func (l Link) String() string {
	var b strings.Builder
	b.WriteString("<" + l.URL + ">")
	if len(l.Rel) == 1 {
		b.WriteString("; rel=" + l.Rel[0])
	} else if len(l.Rel) > 1 {
		b.WriteString(`; rel="` + strings.Join(l.Rel, " ") + `"`)
	}
	if l.Type != "" {
		b.WriteString(`; type="` + l.Type + `"`)
	}
	if l.Pri > 0 {
		b.WriteString("; pri=" + strconv.Itoa(l.Pri))
	}
	if l.Geo != "" {
		b.WriteString("; geo=" + l.Geo)
	}
	if l.Pref {
		b.WriteString("; pref")
	}
	return b.String()
}

// Digest formats an RFC 3230 instance digest value from a registry
// algorithm name and a lower-case hex digest: "SHA-256=<base64>".
func Digest(alg, hexSum string) (string, error) {
	canon, ok := digest.Canonical(alg)
	if !ok || !digest.IANA(canon) {
		return "", fmt.Errorf("digest: %q has no HTTP Digest name", alg)
	}
	raw, err := hex.DecodeString(hexSum)
	if err != nil || len(hexSum) != digest.HexLen(canon) {
		return "", fmt.Errorf("digest: %q is not a %s digest", hexSum, canon)
	}
	name := strings.ToUpper(canon)
	if canon == digest.SHA1 {
		name = "SHA" // RFC 3230's name for it
	}
	return name + "=" + base64.StdEncoding.EncodeToString(raw), nil
}

// ReprDigest formats an RFC 9530 Repr-Digest value, the successor of the
// instance digest: "sha-256=:<base64>:".
func ReprDigest(alg, hexSum string) (string, error) {
	v, err := Digest(alg, hexSum)
	if err != nil {
		return "", err
	}
	name, b64, _ := strings.Cut(v, "=")
	canon, _ := digest.Canonical(alg)
	if name == "SHA" {
		canon = "sha"
	}
	return canon + "=:" + b64 + ":", nil
}

// ParseDigest reads RFC 3230 instance digests ("SHA-256=base64") and
// RFC 9530 Repr-Digest ("sha-256=:base64:"), returning the strongest one
// the digest registry computes, as a registry name and lower-case hex;
// nothing usable gives "", "".
func ParseDigest(values []string) (string, string) {
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

// ParseLinks reads Link header field values, resolving each target
// against base; links that are not http(s) are left out.
func ParseLinks(values []string, base string) []Link {
	b, _ := url.Parse(base)
	if b == nil {
		b = &url.URL{}
	}
	var out []Link
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

func parseLink(raw string, base *url.URL) (Link, bool) {
	raw = strings.TrimSpace(raw)
	end := strings.IndexByte(raw, '>')
	if !strings.HasPrefix(raw, "<") || end < 0 {
		return Link{}, false
	}
	target, err := base.Parse(raw[1:end])
	if err != nil || (target.Scheme != "http" && target.Scheme != "https") {
		return Link{}, false
	}
	l := Link{URL: target.String()}
	for _, p := range strings.Split(raw[end+1:], ";") {
		k, v, _ := strings.Cut(strings.TrimSpace(p), "=")
		v = strings.Trim(strings.TrimSpace(v), `"`)
		switch strings.ToLower(strings.TrimSpace(k)) {
		case "rel":
			l.Rel = append(l.Rel, strings.Fields(strings.ToLower(v))...)
		case "type":
			l.Type = strings.ToLower(v)
		case "geo":
			l.Geo = strings.ToLower(v)
		case "pri":
			// RFC 6249 §3.1: 1 to 999999. Another value is no priority,
			// not one that ranks its mirror above the others.
			if n, err := strconv.Atoi(v); err == nil && n >= 1 && n <= 999999 {
				l.Pri = n
			}
		case "pref":
			l.Pref = true
		}
	}
	return l, true
}
