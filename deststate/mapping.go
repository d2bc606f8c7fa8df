package deststate

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/rsdump/rsdump/internal/safepath"
	"github.com/rsdump/rsdump/resourcesync"
)

// Layout says where a bitstream lands in a destination tree.
type Layout int

const (
	// ByURI places a bitstream at its URI relative to the base URL the
	// Source used, as resync's --map URL=DIR does.
	ByURI Layout = iota
	// ByPath places it at the manifest's path attribute.
	ByPath
)

// ParseLayout reads the --layout flag value.
func ParseLayout(s string) (Layout, error) {
	switch s {
	case "url", "uri":
		return ByURI, nil
	case "path":
		return ByPath, nil
	}
	return 0, fmt.Errorf("unknown layout %q (want url or path)", s)
}

// Mapper maps manifest entries to paths relative to a destination tree:
// where each bitstream lands, the one rule unpack, sync and verify's
// audit share. No bitstream may land in rsdump's state directory.
type Mapper struct {
	Layout Layout
	Base   string // with ByURI: the URI prefix; a trailing slash is implied
}

// NewMapper checks the base URL for ByURI.
func NewMapper(layout Layout, base string) (Mapper, error) {
	m := Mapper{Layout: layout, Base: base}
	if layout == ByPath {
		return m, nil
	}
	// Encoded as pack encodes it, so that the --base-url given to pack
	// maps the URIs it wrote.
	b, err := resourcesync.CleanBaseURL(base)
	if err != nil {
		return m, fmt.Errorf("base URL: %w", err)
	}
	m.Base = b
	return m, nil
}

// Target returns where u lands, as a slash-separated path relative to the
// destination, or an error naming the URI when it would land outside the
// tree or in rsdump's state directory.
func (m Mapper) Target(u resourcesync.URL) (string, error) {
	var rel string
	var err error
	if m.Layout == ByPath {
		rel, err = m.byPath(u)
	} else {
		rel, err = m.byURI(u.Loc)
	}
	if err != nil {
		return "", err
	}
	if err := safepath.Check(rel); err != nil {
		return "", fmt.Errorf("%s resolves to %q: %w", u.Loc, rel, err)
	}
	// EqualFold: on a case-insensitive file system (macOS, Windows)
	// ".RSDUMP" is the state directory too.
	if first, _, _ := strings.Cut(rel, "/"); strings.EqualFold(first, DirName) {
		return "", fmt.Errorf("%s resolves to %q, inside rsdump's state directory", u.Loc, rel)
	}
	return rel, nil
}

func (m Mapper) byPath(u resourcesync.URL) (string, error) {
	if u.MD == nil || u.MD.Path == "" {
		return "", fmt.Errorf("%s has no path attribute", u.Loc)
	}
	return strings.TrimPrefix(u.MD.Path, "/"), nil
}

// byURI strips the base and percent-decodes each segment. A decoded
// segment may not contain a slash: %2F would otherwise create directories
// the URI does not show.
func (m Mapper) byURI(loc string) (string, error) {
	rest, ok := strings.CutPrefix(loc, m.Base)
	switch {
	case !ok:
		return "", fmt.Errorf("%s is outside the base URL %s", loc, m.Base)
	case rest == "":
		return "", fmt.Errorf("%s is the base URL itself", loc)
	case strings.ContainsAny(rest, "?#"):
		return "", fmt.Errorf("%s has a query or fragment, which names no file", loc)
	}
	if !strings.Contains(rest, "%") {
		return rest, nil // nothing escaped: each segment unescapes to itself
	}
	segs := strings.Split(rest, "/")
	for i, s := range segs {
		d, err := url.PathUnescape(s)
		if err != nil {
			return "", fmt.Errorf("%s: %w", loc, err)
		}
		if strings.Contains(d, "/") {
			return "", fmt.Errorf("%s has an encoded slash in a segment", loc)
		}
		segs[i] = d
	}
	return strings.Join(segs, "/"), nil
}
