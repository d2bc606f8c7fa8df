package resourcesync

import (
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/rsdump/rsdump/finding"
	"github.com/rsdump/rsdump/internal/safepath"
)

// checker collects the findings of the header or of one entry.
type checker struct {
	entry    int
	loc      string
	findings []finding.Finding
}

func (r *checker) errorf(format string, args ...any) { r.add(finding.Error, format, args...) }

func (r *checker) warnf(format string, args ...any) { r.add(finding.Warning, format, args...) }

func (r *checker) add(s finding.Severity, format string, args ...any) {
	r.findings = append(r.findings, finding.Finding{Severity: s, Entry: r.entry, URI: r.loc, Msg: fmt.Sprintf(format, args...)})
}

// checkLoc requires an absolute URI. A loc with characters a URI cannot
// hold unescaped (resync writes spaces and non-ASCII as they are) is only
// a warning: the intended URI is clear, but other tools may differ on it.
func (r *checker) checkLoc(loc string) {
	if loc == "" {
		r.errorf("no <loc>")
		return
	}
	u, err := url.Parse(loc)
	if err != nil || !u.IsAbs() {
		r.errorf("<loc> %q is not an absolute URI", loc)
		return
	}
	if i := strings.IndexFunc(loc, notURIRune); i >= 0 {
		r.warnf("<loc> is not percent-encoded (%q at byte %d)", loc[i:i+1], i)
	}
}

// notURIRune reports whether c may not appear unescaped in a URI (RFC 3986
// §2): controls, space, non-ASCII and the delimiters it excludes.
func notURIRune(c rune) bool {
	return c <= ' ' || c >= 0x7f || strings.ContainsRune(`"<>\^`+"`{|}", c)
}

var changeFreqs = map[string]bool{
	"always": true, "hourly": true, "daily": true, "weekly": true,
	"monthly": true, "yearly": true, "never": true,
}

func (r *checker) checkChangeFreq(k Kind, cf string) {
	switch {
	case cf == "":
	case k == SitemapIndex:
		r.errorf("<changefreq> is not part of a <sitemap> entry")
	case !changeFreqs[cf]:
		r.errorf("<changefreq> %q is not one of always, hourly, daily, weekly, monthly, yearly, never", cf)
	}
}

func (r *checker) checkLinks(links []Link) {
	for i := range links {
		r.checkLink(&links[i])
	}
}

func (r *checker) checkLink(l *Link) {
	if l.Rel == "" {
		r.errorf("<rs:ln> has no rel")
	}
	if l.Href == "" {
		r.errorf("<rs:ln> has no href")
	}
	if l.Pri != 0 && (l.Pri < 1 || l.Pri > 999999) {
		r.errorf("<rs:ln> pri %d is not in 1..999999", l.Pri)
	}
	r.checkPathSyntax("rs:ln", l.Path)
	r.checkRepresentation("rs:ln", l.Length, l.Hash)
}

func (r *checker) checkRepresentation(elem string, length *int64, hash string) {
	if length != nil && *length < 0 {
		r.errorf("<%s> length %d is negative", elem, *length)
	}
	if hash != "" {
		r.checkHash(elem, hash)
	}
}

// checkHash checks the syntax of §7: whitespace-separated alg:hex tokens.
// Hex must be lowercase: rsdump compares hex as strings (docs/formats.md).
func (r *checker) checkHash(elem, hash string) {
	tokens := strings.Fields(hash)
	if len(tokens) == 0 {
		r.errorf("<%s> hash %q has no alg:hex token", elem, hash)
	}
	for _, tok := range tokens {
		alg, hex, ok := strings.Cut(tok, ":")
		if !ok || !isAlgName(alg) || !isLowerHex(hex) {
			r.errorf("<%s> hash token %q is not alg:hex with lowercase hex digits", elem, tok)
		}
	}
}

func isAlgName(s string) bool {
	return s != "" && strings.IndexFunc(s, func(c rune) bool {
		return !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-')
	}) < 0
}

// isLowerHex reports whether s is a whole number of bytes in lowercase hex.
func isLowerHex(s string) bool {
	return s != "" && len(s)%2 == 0 && strings.IndexFunc(s, func(c rune) bool {
		return !('0' <= c && c <= '9' || 'a' <= c && c <= 'f')
	}) < 0
}

// checkPathSyntax keeps a path inside the package when it is unpacked,
// by internal/safepath's rules, the ones verify and metalink apply: a ".."
// segment or a backslash (a separator on Windows) could leave it. A path
// without the leading slash the spec shows is only a warning, since
// resync writes paths that way and their meaning is the same.
func (r *checker) checkPathSyntax(elem, p string) {
	if p == "" {
		return
	}
	var e *safepath.Error
	switch {
	case strings.HasSuffix(p, "/"):
		r.errorf("<%s> path %q ends with a slash", elem, p)
	case errors.As(safepath.Check(strings.TrimPrefix(p, "/")), &e):
		r.errorf("<%s> path %q %s", elem, p, e.Reason)
	}
	if !strings.HasPrefix(p, "/") {
		r.warnf("<%s> path %q has no leading slash", elem, p)
	}
}
