package unpack

import (
	"errors"
	"fmt"
	"strings"

	"github.com/rsdump/rsdump/deststate"
	"github.com/rsdump/rsdump/pkgread"
)

// ErrBaseURL is the error, for the whole run, when no bitstream URI of a
// package lies under Options.Mapper's base URL: the base is wrong, not
// the package, and one error naming the prefix the manifest uses says so
// better than a refusal per bitstream.
var ErrBaseURL = errors.New("no bitstream URI is under the base URL")

// wrongBase returns an error wrapping ErrBaseURL when the package has
// bitstreams and none is under the base URL.
func (p *pkgRun) wrongBase() error {
	m := p.u.opts.Mapper
	if m.Layout != deststate.ByURI || len(p.pkg.Bitstreams) == 0 {
		return nil
	}
	locs := make([]string, 0, len(p.pkg.Bitstreams))
	for _, b := range p.pkg.Bitstreams {
		if strings.HasPrefix(b.URL.Loc, m.Base) {
			return nil
		}
		locs = append(locs, b.URL.Loc)
	}
	if base, ok := sourceBase(p.pkg.Bitstreams); ok {
		return fmt.Errorf("%s: %w %s: the Source's base URL is %s", p.ref.Loc, ErrBaseURL, m.Base, base)
	}
	return fmt.Errorf("%s: %w %s: the manifest's URIs start with %s", p.ref.Loc, ErrBaseURL, m.Base, dirPrefix(locs))
}

// sourceBase is the base URL the Source packed with, when every bitstream
// says the same: its URI less as many trailing segments as its name in
// the package has below resources/ or changes/.
func sourceBase(bs []*pkgread.Bitstream) (string, bool) {
	base := ""
	for _, b := range bs {
		loc := b.URL.Loc
		_, rel, ok := strings.Cut(b.File.Name, "/")
		if !ok {
			return "", false
		}
		for range strings.Count(rel, "/") + 1 {
			i := strings.LastIndex(loc, "/")
			if i < 0 {
				return "", false
			}
			loc = loc[:i]
		}
		loc += "/"
		if base != "" && loc != base {
			return "", false
		}
		base = loc
	}
	return base, base != ""
}

// dirPrefix is the longest common prefix of locs that ends with a slash.
func dirPrefix(locs []string) string {
	prefix := locs[0]
	for _, l := range locs[1:] {
		for !strings.HasPrefix(l, prefix) {
			prefix = prefix[:len(prefix)-1]
		}
	}
	if i := strings.LastIndex(prefix, "/"); i >= 0 {
		return prefix[:i+1]
	}
	return prefix
}
