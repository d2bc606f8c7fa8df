package replica

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/rsdump/rsdump/finding"
	"github.com/rsdump/rsdump/pkgread"
	"github.com/rsdump/rsdump/resourcesync"
	"github.com/rsdump/rsdump/sign"
)

// baseURL settles the URI prefix that maps to the tree: the one given,
// else the one the state records (so that it never moves between runs),
// else the one the Source's documents imply. An implied one is made of
// URIs resourcesync.Ref allows the documents to name: never an s3:// one
// from a Source read over HTTP without the user's grant.
func (s *syncer) baseURL(ctx context.Context) (string, error) {
	switch {
	case s.opts.BaseURL != "":
		return resourcesync.CleanBaseURL(s.opts.BaseURL)
	case s.state.Sync != nil && s.state.Sync.BaseURL != "":
		return s.state.Sync.BaseURL, nil
	}
	if doc := s.src.Docs[resourcesync.CapResourceDump]; doc != "" {
		b, err := s.dumpBase(ctx, doc)
		if err != nil {
			return "", err
		}
		if b != "" {
			s.note("base URL %s, from the manifest of %s", b, doc)
			return b, nil
		}
	}
	for _, c := range []string{resourcesync.CapResourceList, resourcesync.CapChangeDump, resourcesync.CapChangeList} {
		if doc := s.src.Docs[c]; doc != "" {
			b, err := s.listBase(ctx, doc)
			if err != nil {
				return "", err
			}
			if b != "" {
				s.note("base URL %s, the common prefix of the resources in %s", b, doc)
				return b, nil
			}
		}
	}
	return "", fmt.Errorf("%s: cannot tell which URI prefix maps to the destination: give the base URL", s.given)
}

// dumpBase reads the detached manifest of a Resource Dump's first package
// and takes the base from an entry's URI and its path in the package:
// the URI less as many segments as the path has below /resources/. The
// error is for a dump or manifest that names what it may not.
func (s *syncer) dumpBase(ctx context.Context, doc string) (string, error) {
	d, err := pkgread.LoadDump(ctx, s.opts.Client, doc, finding.NewReporter(nil))
	var se *sign.Error
	if errors.Is(err, pkgread.ErrRejected) || errors.As(err, &se) {
		return "", err
	}
	if err != nil || len(d.Packages) == 0 || d.Packages[0].Contents == "" {
		return "", nil
	}
	base := ""
	err = s.scan(ctx, d.Packages[0].Contents, func(u resourcesync.URL) bool {
		if u.MD != nil && u.MD.Path != "" {
			base = baseFromPath(u.Loc, u.MD.Path)
			return false
		}
		return true
	})
	return base, err
}

func baseFromPath(loc, p string) string {
	_, rel, ok := strings.Cut(strings.TrimPrefix(p, "/"), "/") // below resources/
	if !ok || rel == "" {
		return ""
	}
	for range strings.Count(rel, "/") + 1 {
		i := strings.LastIndex(loc, "/")
		if i < 0 {
			return ""
		}
		loc = loc[:i]
	}
	return loc + "/"
}

// listBase is the longest directory prefix of the first entries of a
// list.
func (s *syncer) listBase(ctx context.Context, doc string) (string, error) {
	prefix, n := "", 0
	err := s.scan(ctx, doc, func(u resourcesync.URL) bool {
		if n == 0 {
			prefix = u.Loc[:strings.LastIndex(u.Loc, "/")+1]
		}
		for !strings.HasPrefix(u.Loc, prefix) {
			prefix = prefix[:strings.LastIndex(prefix[:len(prefix)-1], "/")+1]
		}
		n++
		return n < 10000
	})
	if err != nil || !strings.Contains(strings.TrimPrefix(strings.TrimPrefix(prefix, "https://"), "http://"), "/") {
		return "", err
	}
	return prefix, nil
}

var errStop = errors.New("stop")

// scan hands the entries of a document (and its index's parts) to fn
// until it returns false, each with a <loc> resourcesync.Ref allows. The
// error is for a document that names what it may not, or whose signature
// a trust refuses; one that cannot be read just ends the scan.
func (s *syncer) scan(ctx context.Context, doc string, fn func(resourcesync.URL) bool) error {
	ld := resourcesync.Loader{
		Open: resourcesync.Opener{Client: s.opts.Client}.Open,
		Entry: func(d *resourcesync.Document, _ int, u resourcesync.URL) error {
			if d.Header.Kind != resourcesync.URLSet || !strings.Contains(u.Loc, "/") {
				return nil
			}
			if _, err := resourcesync.Ref(ctx, d.Loc, u.Loc); err != nil {
				return err
			}
			if !fn(u) {
				return errStop
			}
			return nil
		},
	}
	var re *resourcesync.RefError
	var se *sign.Error
	if err := ld.Load(ctx, doc); errors.As(err, &re) || errors.As(err, &se) {
		return err // a document refused, not one that cannot be read
	}
	return nil
}

// peek reads the header of the document at loc.
func peek(ctx context.Context, c *http.Client, loc string) (resourcesync.Header, error) {
	var h resourcesync.Header
	ld := resourcesync.Loader{Open: resourcesync.Opener{Client: c}.Open, NoParts: true, NotAfter: resourcesync.Horizon(),
		Document: func(d *resourcesync.Document) error { h = d.Header; return errStop }}
	if err := ld.Load(ctx, loc); err != nil && !errors.Is(err, errStop) {
		return h, err
	}
	return h, nil
}
