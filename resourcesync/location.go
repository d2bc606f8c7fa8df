package resourcesync

import (
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"

	"github.com/rsdump/rsdump/s3"
)

// LocationKind is what a Location names.
type LocationKind uint8

// The kinds of Location; the zero Location has none.
const (
	LocPath LocationKind = iota + 1 // a local file or directory
	LocHTTP                         // an http or https URL
	LocS3                           // an object or prefix in S3, s3://BUCKET/KEY (package s3)
)

// A Location is where a user says a Source, document or package is: an
// http or https URL, an S3 object or prefix, or a local path. It is
// parsed once, where the string comes in (a command line, a state file),
// by ParseLocation, and passed down typed, so that nothing below guesses
// again whether a string is a URL or a path, and nothing that is neither
// ("htp://x", "file:///x", "host:8080/x") is ever taken as a path.
//
// References a document makes are not Locations until Resolve (the one
// rule for them) has judged them: LocationOf is for its results.
type Location struct {
	kind LocationKind
	s    string
}

// ErrLocation is a string ParseLocation refuses: a *LocationError wraps
// it.
var ErrLocation = errors.New("not an http(s) URL, an s3:// URL or a path")

// LocationError is a string ParseLocation refuses, and why.
type LocationError struct {
	Given string
	Why   string
}

func (e *LocationError) Error() string { return fmt.Sprintf("%q: %s", e.Given, e.Why) }

// Is makes errors.Is(err, ErrLocation) hold.
func (e *LocationError) Is(target error) bool { return target == ErrLocation }

// ParseLocation parses a location as a user gives it:
//
//   - http://HOST/... or https://HOST/... (the scheme in any case) is a
//     URL, which must parse and name a host;
//   - s3://BUCKET/KEY is an object or prefix (s3.Split's rules);
//   - anything else with a colon before its first slash is refused: a
//     scheme rsdump does not read ("file:", "ftp:", a typo such as
//     "htp:"), or a HOST:PORT without its scheme. A file whose name holds
//     such a colon is named ./NAME;
//   - the rest is a path, kept as given (a Windows drive letter too).
//
// A string refused is a *LocationError that says what was meant, when it
// can tell.
func ParseLocation(s string) (Location, error) {
	refuse := func(format string, args ...any) (Location, error) {
		return Location{}, &LocationError{Given: s, Why: fmt.Sprintf(format, args...)}
	}
	scheme, rest, hasScheme := splitScheme(s)
	switch {
	case s == "":
		return refuse("an empty location")
	case hasScheme && (strings.EqualFold(scheme, "http") || strings.EqualFold(scheme, "https")):
		lower := strings.ToLower(scheme) + ":" + rest
		u, err := url.Parse(lower)
		var ue *url.Error
		switch {
		case errors.As(err, &ue):
			return refuse("%v", ue.Err)
		case err != nil:
			return refuse("%v", err)
		case u.Opaque != "" || u.Host == "":
			return refuse("not an absolute http(s) URL: it names no host (%s://HOST/...)", u.Scheme)
		}
		return Location{LocHTTP, lower}, nil
	case hasScheme && strings.EqualFold(scheme, s3.Scheme):
		lower := s3.Scheme + ":" + rest
		if _, _, err := s3.Split(lower); err != nil {
			return refuse("%v", strings.TrimPrefix(err.Error(), fmt.Sprintf("%q: ", lower)))
		}
		return Location{LocS3, lower}, nil
	case filepath.VolumeName(s) != "":
		return Location{LocPath, s}, nil
	}
	first, _, _ := strings.Cut(filepath.ToSlash(s), "/")
	colon := strings.LastIndexByte(first, ':')
	switch {
	case colon < 0:
		return Location{LocPath, s}, nil
	case colon > 0 && isPort(first[colon+1:]):
		return refuse("it reads as HOST:PORT without a scheme; write http://%s for a URL, ./%s for a path", s, s)
	case hasScheme && strings.EqualFold(scheme, "file"):
		return refuse("rsdump reads no file: URL; give the file's path")
	case hasScheme && strings.HasPrefix(rest, "//"):
		return refuse("rsdump reads no %s: URL (only http, https and s3)", scheme)
	case hasScheme:
		return refuse("rsdump reads no %s: URL (only http, https and s3); write ./%s for a path", scheme, s)
	}
	return refuse("a colon in its first segment; write ./%s for a path", s)
}

// splitScheme splits s at the colon ending its scheme (RFC 3986 §3.1: a
// letter, then letters, digits, "+", "-" or "."), when it has one.
func splitScheme(s string) (scheme, rest string, ok bool) {
	scheme, rest, ok = strings.Cut(s, ":")
	if !ok || scheme == "" {
		return "", s, false
	}
	for i, c := range []byte(scheme) {
		letter := 'a' <= c|0x20 && c|0x20 <= 'z'
		if !letter && (i == 0 || !('0' <= c && c <= '9' || c == '+' || c == '-' || c == '.')) {
			return "", s, false
		}
	}
	return scheme, rest, true
}

func isPort(s string) bool {
	if s == "" || len(s) > 5 {
		return false
	}
	for _, c := range []byte(s) {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// LocationOf is the Location of a string rsdump made itself: a reference
// Resolve returned (an http(s) or s3 URL, or a path beside a local
// document), a path it joined. IsURL says which. What a user gives goes
// through ParseLocation.
func LocationOf(s string) Location {
	switch {
	case s == "":
		return Location{}
	case s3.IsURL(s):
		return Location{LocS3, s}
	case IsURL(s):
		return Location{LocHTTP, s}
	}
	return Location{LocPath, s}
}

// Kind says what l names; 0 for the zero Location.
func (l Location) Kind() LocationKind { return l.kind }

// String is the URL or the path.
func (l Location) String() string { return l.s }

// IsZero says whether l is the zero Location: none given.
func (l Location) IsZero() bool { return l.kind == 0 }

// IsURL says whether l is read through an HTTP client: an http(s) or s3
// URL.
func (l Location) IsURL() bool { return l.kind == LocHTTP || l.kind == LocS3 }

// IsBase says whether l is a URL that names no document, only a place
// (its path is empty or ends in "/"): §6.3's discovery starts at the
// well-known URI of such a base URL.
func (l Location) IsBase() bool {
	if !l.IsURL() {
		return false
	}
	u, err := url.Parse(l.s)
	return err == nil && (u.Path == "" || strings.HasSuffix(u.Path, "/"))
}
