package verify

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/rsdump/rsdump/resourcesync"
)

// expand turns a target into the packages to verify, loading and checking
// dump documents on the way.
func (v *verifier) expand(ctx context.Context, t string) ([]PackageRef, error) {
	if resourcesync.IsURL(t) {
		if isZip(t) {
			return []PackageRef{standalone(t)}, nil
		}
		return v.loadDump(ctx, t)
	}
	fi, err := os.Stat(t)
	switch {
	case err != nil:
		return nil, err
	case fi.IsDir():
		return v.scanDir(ctx, t)
	case isZip(t):
		return []PackageRef{standalone(t)}, nil
	}
	return v.loadDump(ctx, t)
}

func isZip(name string) bool { return strings.HasSuffix(strings.ToLower(name), ".zip") }

// standalone is a package given without a dump document: nothing is known
// of its length or hash, and either manifest capability is accepted.
func standalone(loc string) PackageRef { return PackageRef{Loc: loc, Length: -1} }

// scanDir verifies the dump documents in dir and the packages they list.
// Packages no document lists are verified on their own, with a warning
// when there were documents: a package left behind by an interrupted
// publication, or one the document forgot.
func (v *verifier) scanDir(ctx context.Context, dir string) ([]PackageRef, error) {
	docs, zips, err := ListDir(dir)
	if err != nil {
		return nil, err
	}
	if len(docs) == 0 && len(zips) == 0 {
		return nil, fmt.Errorf("%s: no dump document and no package", dir)
	}
	var refs []PackageRef
	covered := map[string]bool{}
	for _, d := range docs {
		rs, err := v.loadDump(ctx, d)
		if err != nil {
			return nil, err
		}
		for _, r := range rs {
			covered[filepath.Clean(r.Loc)] = true
		}
		refs = append(refs, rs...)
	}
	for _, z := range zips {
		if covered[filepath.Clean(z)] {
			continue
		}
		if len(docs) > 0 {
			v.rep.Report(Finding{Severity: Warning, Check: CheckDocument, Source: z, Msg: "package is not listed in any dump document in " + dir})
		}
		refs = append(refs, standalone(z))
	}
	return refs, nil
}

// ListDir finds the dump documents in dir, a local copy of a dump, and
// the packages: the top documents (not the parts of an index, which the
// index covers), Resource Dumps before Change Dumps, each in name order.
func ListDir(dir string) (docs, zips []string, err error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, err
	}
	var parts []string
	caps := map[string]string{}
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		switch {
		case !e.Type().IsRegular():
		case isZip(e.Name()):
			zips = append(zips, p)
		case strings.HasSuffix(e.Name(), ".xml"):
			h, err := resourcesync.Peek(context.Background(), p)
			if err != nil || !resourcesync.IsDump(h) {
				continue
			}
			caps[p] = h.MD.Capability
			if _, isPart := h.Link("index"); isPart {
				parts = append(parts, p)
			} else {
				docs = append(docs, p)
			}
		}
	}
	if len(docs) == 0 {
		docs = parts
	}
	docs = dropListedParts(docs)
	sort.Slice(docs, func(i, j int) bool {
		if caps[docs[i]] != caps[docs[j]] {
			return caps[docs[i]] == resourcesync.CapResourceDump
		}
		return docs[i] < docs[j]
	})
	return docs, zips, nil
}

var errNotIndex = errors.New("not an index")

// dropListedParts leaves out the documents an index among docs lists:
// parts that do not link back to their index with rel="index" look like
// top documents, and would be read twice.
func dropListedParts(docs []string) []string {
	listed := map[string]bool{}
	for _, d := range docs {
		l := resourcesync.Loader{
			NoParts: true,
			Document: func(doc *resourcesync.Document) error {
				if doc.Header.Kind != resourcesync.SitemapIndex {
					return errNotIndex // no need to read its entries
				}
				return nil
			},
			Entry: func(doc *resourcesync.Document, _ int, u resourcesync.URL) error {
				listed[resourcesync.Resolve(doc.Loc, u.Loc)] = true
				return nil
			},
		}
		l.Load(context.Background(), d) // a document that fails is reported when it is verified
	}
	var top []string
	for _, d := range docs {
		if !listed[d] {
			top = append(top, d)
		}
	}
	return top
}
