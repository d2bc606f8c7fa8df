// Package safepath holds rsdump's one set of rules for names that come from
// outside (manifest paths, ZIP entries, Metalink file names, names taken
// from URLs) and become paths under a directory rsdump writes to. Names
// are judged in their slash form, the same on every system: a name that
// would be safe on Linux but not on Windows (a backslash, a drive letter)
// is refused everywhere, since packages and documents move between
// systems.
package safepath

import (
	"path"
	"path/filepath"
	"strings"
	"unicode/utf8"
)

// MaxSegment is the longest path segment, in bytes, that common file
// systems accept.
const MaxSegment = 255

// Kind sorts the problems with a name.
type Kind int

const (
	// Missing: the name is empty.
	Missing Kind = iota + 1
	// Invalid: the name cannot be a portable file name (invalid UTF-8, a
	// control character, an empty or overlong segment).
	Invalid
	// Traversal: the name leaves, or on some system could leave, the
	// directory it is resolved under (absolute, drive letter, backslash,
	// "." or ".." segments).
	Traversal
)

// Error says why Name is unsafe. Reason is a predicate ("is absolute") so
// that a caller can put the name, or "name", in front of it.
type Error struct {
	Name   string
	Kind   Kind
	Reason string
}

// Error returns "name " and the reason; callers add which entry it is.
func (e *Error) Error() string { return "name " + e.Reason }

// Check returns a *Error if name is not a safe relative path, else nil.
// Refused: the empty name, invalid UTF-8, control characters, backslashes,
// absolute names, drive letters ("C:"), and ".", ".." and empty segments
// (only ".." can escape, but "a/./b" and "a//b" name the same file as
// "a/b" for some tools and not others, which defeats duplicate checks),
// and segments longer than MaxSegment bytes.
func Check(name string) error {
	bad := func(k Kind, reason string) error { return &Error{Name: name, Kind: k, Reason: reason} }
	switch {
	case name == "":
		return bad(Missing, "is empty")
	case !utf8.ValidString(name):
		return bad(Invalid, "is not valid UTF-8")
	case strings.ContainsFunc(name, isControl):
		return bad(Invalid, "contains a control character")
	case strings.Contains(name, `\`):
		return bad(Traversal, "contains a backslash, a path separator on Windows")
	case strings.HasPrefix(name, "/"):
		return bad(Traversal, "is absolute")
	case hasDriveLetter(name):
		return bad(Traversal, "starts with a drive letter")
	}
	for seg := range strings.SplitSeq(name, "/") {
		switch {
		case seg == "..":
			return bad(Traversal, `has a ".." segment and leaves the root`)
		case seg == ".":
			return bad(Traversal, `is not canonical ("." segment)`)
		case seg == "":
			return bad(Invalid, "is not canonical (empty segment)")
		case len(seg) > MaxSegment:
			return bad(Invalid, "has a path segment longer than 255 bytes")
		}
	}
	if path.Clean(name) != name || !filepath.IsLocal(filepath.FromSlash(name)) {
		return bad(Invalid, "is not a local path") // Windows reserved names, on Windows
	}
	return nil
}

func isControl(r rune) bool { return r < 0x20 || r == 0x7f }

// hasDriveLetter reports a Windows drive prefix such as "C:".
func hasDriveLetter(name string) bool {
	if len(name) < 2 || name[1] != ':' {
		return false
	}
	c := name[0] | 0x20
	return 'a' <= c && c <= 'z'
}
