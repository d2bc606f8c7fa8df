package resourcesync

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/rsdump/rsdump/internal/safepath"
	"github.com/rsdump/rsdump/s3"
)

// A reference is what a document names for rsdump to read: an index's
// part, a package's <loc>, an rs:ln href (a detached manifest, a
// Metalink, a mirror, a Capability List), a Metalink's url. A document is
// data, not authority: Ref and Resolve are the one rule for which
// references are followed, applied wherever one is turned into something
// to read.
//
//   - A local document is the user's own: its references are taken as
//     they are, and a dump's packages are the files beside it.
//   - A document read from a URL (http, https, s3) names only absolute
//     URLs. A string that does not parse as one (a relative reference, a
//     bad escape, a control character, a path) is refused: it never
//     becomes a path on the Destination's disk.
//   - It names http and https URLs, and s3:// ones only when the user
//     granted S3 by giving an s3:// location (s3.Grant): the Destination's
//     credentials are never used because a Source names an object.

// Errors a refused reference wraps (besides s3.ErrNotGranted and
// s3.ErrBadURL).
var (
	ErrNotAbsolute = errors.New("not an absolute URL")
	ErrScheme      = errors.New("not an http, https or s3 URL")
)

// RefError is a reference a document may not make.
type RefError struct {
	Doc string // the document
	Ref string // the reference, as written there
	Err error
}

func (e *RefError) Error() string {
	return fmt.Sprintf("%s: reference %q refused: %v", e.Doc, e.Ref, e.Err)
}

func (e *RefError) Unwrap() error { return e.Err }

// Ref is the URL the reference ref in the document at doc names, when the
// document may name it (see above): ref itself for a local document, the
// absolute http, https or (granted) s3 URL for a remote one. Whatever is
// refused is a *RefError naming the document and the reference.
func Ref(ctx context.Context, doc, ref string) (string, error) {
	if !IsURL(doc) {
		return ref, nil
	}
	refused := func(err error) (string, error) { return "", &RefError{Doc: doc, Ref: ref, Err: err} }
	u, err := url.Parse(ref)
	var ue *url.Error
	switch {
	case errors.As(err, &ue):
		return refused(fmt.Errorf("%w (%v)", ErrNotAbsolute, ue.Err))
	case err != nil || !u.IsAbs():
		return refused(ErrNotAbsolute)
	case u.Scheme != "http" && u.Scheme != "https" && u.Scheme != s3.Scheme:
		return refused(ErrScheme)
	case u.Host == "":
		return refused(ErrNotAbsolute)
	}
	abs := u.String() // the scheme in lower case, as IsURL wants it
	if u.Scheme == s3.Scheme {
		if !s3.Granted(ctx) {
			return refused(s3.ErrNotGranted)
		}
		if _, _, err := s3.Split(abs); err != nil {
			return refused(&stripped{msg: strings.TrimPrefix(err.Error(), strconv.Quote(abs)+": "), err: err})
		}
	}
	return abs, nil
}

// Resolve finds where what the reference ref in the document at doc names
// is read. For a document fetched over HTTP that is Ref's URL. For a local
// document it is the file of the same name beside it: a dump is published
// under one URL prefix and mirrored or downloaded into one directory, and
// the Source's URLs (often not yet published, or internal) are not
// fetched behind the user's back. An object in S3 is read the same way:
// its neighbour under the same prefix, which is where rsdump pack -o
// s3://BUCKET/PREFIX put it.
func Resolve(ctx context.Context, doc, ref string) (string, error) {
	u, err := Ref(ctx, doc, ref)
	if err != nil || IsURL(doc) && !s3.IsURL(doc) {
		return u, err
	}
	loc, err := Beside(doc, BaseName(ref))
	if err != nil {
		return "", &RefError{Doc: doc, Ref: ref, Err: err}
	}
	return loc, nil
}

// Beside is the document or package called name next to the document at
// doc (a path, an http(s) URL or an s3:// URL). name must be one safe path
// segment (internal/safepath).
func Beside(doc, name string) (string, error) {
	if err := safepath.Check(name); err != nil || strings.Contains(name, "/") {
		return "", fmt.Errorf("no file name at its end (%q)", name)
	}
	switch {
	case s3.IsURL(doc):
		return doc[:strings.LastIndexByte(doc, '/')+1] + url.PathEscape(name), nil
	case IsURL(doc):
		u, err := url.Parse(doc)
		if err != nil {
			return "", err
		}
		return u.ResolveReference(&url.URL{Path: name}).String(), nil
	}
	return filepath.Join(filepath.Dir(doc), name), nil
}

// IsURL reports whether s is meant as a URL rather than a path: it starts
// with the scheme http, https or s3 (in any case, as RFC 3986 compares
// schemes) and a colon. It is the one rule, for the command line and the
// library alike: a location that is meant as a URL is read as one (an
// s3://BUCKET/KEY by rsdump's HTTP client, which signs it, package s3),
// and one that is not a valid URL ("http:/host", "s3:bucket") fails as a
// URL, never becoming a path on the disk.
func IsURL(s string) bool {
	scheme, _, ok := strings.Cut(s, ":")
	return ok && (strings.EqualFold(scheme, "http") || strings.EqualFold(scheme, "https")) || s3.IsURL(s)
}

// BaseName is the last path segment of a URL, unescaped: the name a
// package, manifest or part has in a local copy of a dump.
func BaseName(loc string) string {
	p := loc
	if u, err := url.Parse(loc); err == nil {
		p = u.Path
	}
	return path.Base(p)
}
