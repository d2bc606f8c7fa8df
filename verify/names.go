package verify

import (
	"fmt"
	"path"
	"path/filepath"
	"strings"
	"unicode/utf8"
)

// SafeName reports why a ZIP entry name, or a path relative to a
// destination directory, is unsafe to extract, or returns nil. Names are
// judged in their slash form, the same on every system: a name that would
// be safe on Linux but not on Windows (a backslash, a drive letter) is
// refused everywhere, since packages move between systems. Directory
// entries carry a trailing slash, which is allowed.
func SafeName(name string) error {
	name = strings.TrimSuffix(name, "/")
	switch {
	case name == "":
		return fmt.Errorf("empty name")
	case !utf8.ValidString(name):
		return fmt.Errorf("name is not valid UTF-8")
	case strings.ContainsFunc(name, isControl):
		return fmt.Errorf("name contains a control character")
	case strings.Contains(name, `\`):
		return fmt.Errorf("name contains a backslash, a path separator on Windows")
	case strings.HasPrefix(name, "/"):
		return fmt.Errorf("absolute name")
	case hasDriveLetter(name):
		return fmt.Errorf("name starts with a drive letter")
	}
	return checkSegments(name)
}

// checkSegments refuses "..", "." and empty segments. Only ".." can escape,
// but "a/./b" and "a//b" name the same file as "a/b" for some tools and not
// for others, which defeats the duplicate check.
func checkSegments(name string) error {
	for _, seg := range strings.Split(name, "/") {
		switch seg {
		case "..":
			return fmt.Errorf("name has a \"..\" segment and leaves the root")
		case ".", "":
			return fmt.Errorf("name is not canonical (%q segment)", seg)
		}
	}
	if path.Clean(name) != name || !filepath.IsLocal(filepath.FromSlash(name)) {
		return fmt.Errorf("name is not a local path")
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
