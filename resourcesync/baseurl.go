package resourcesync

import (
	"cmp"
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// CleanBaseURL checks that s can prefix the URIs of resources or
// packages: absolute, with a host, and with no query or fragment. It
// returns s with a trailing slash and its path percent-encoded where RFC
// 3986 requires it (a space, non-ASCII, '"', '<' and the like); escapes
// already there are kept, so "a b" and "a%20b" give the same prefix. A '%'
// that starts no escape is refused, as is a host that is not ASCII: what
// was meant cannot be told.
func CleanBaseURL(s string) (string, error) {
	u, err := url.Parse(s)
	var esc url.EscapeError
	switch {
	case errors.As(err, &esc):
		return "", fmt.Errorf("%q: %q is not a percent-escape (%%XX); write %%25 for a literal %%", s, string(esc))
	case err != nil:
		return "", err
	case !u.IsAbs() || u.Host == "":
		return "", fmt.Errorf("%q is not an absolute URL", s)
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "":
		return "", fmt.Errorf("%q has a query or fragment", s)
	case !isASCII(u.Host):
		return "", fmt.Errorf("%q: write the host name in its ASCII (punycode) form", s)
	}
	u.RawPath = escapePath(cmp.Or(u.RawPath, u.EscapedPath()))
	s = u.String()
	if !strings.HasSuffix(s, "/") {
		s += "/"
	}
	return s, nil
}

// escapePath percent-encodes the bytes of a path as written that RFC 3986
// does not allow in one, keeping the escapes already there ("%2F" stays
// an escaped slash).
func escapePath(p string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		c := p[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("-._~!$&'()*+,;=:@/%", c) >= 0 {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&15])
	}
	return b.String()
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// LocFor is the one rule for the <loc> of a file: the base URL plus its
// path relative to the tree, each segment percent-encoded per RFC 3986 so
// that spaces, '%', '#', '?' and non-ASCII characters survive. pack
// names bitstreams with it, and sync finds a resource's URL from a path
// with it.
func LocFor(base, rel string) string {
	if unreservedPath(rel) {
		return base + rel // nothing to escape: the common case, no splitting
	}
	segs := strings.Split(rel, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return base + strings.Join(segs, "/")
}

// unreservedPath reports whether rel holds only RFC 3986 unreserved
// characters and '/', which url.PathEscape leaves as they are.
func unreservedPath(rel string) bool {
	for i := 0; i < len(rel); i++ {
		c := rel[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
			c == '-' || c == '.' || c == '_' || c == '~' || c == '/') {
			return false
		}
	}
	return true
}
