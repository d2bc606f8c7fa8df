package pkgread

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/rsdump/rsdump/resourcesync"
)

// IsZip says whether a file name or URL names a package, by its extension.
func IsZip(name string) bool { return strings.HasSuffix(strings.ToLower(name), ".zip") }

// ListDir finds the dump documents in dir, a local copy of a dump, and
// the packages: the top documents (not the parts of an index, which the
// index covers), Resource Dumps before Change Dumps, each in name order.
func ListDir(dir string) (docs, zips []string, err error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, err
	}
	var files []string
	for _, e := range entries {
		if e.Type().IsRegular() {
			files = append(files, filepath.Join(dir, e.Name()))
		}
	}
	docs, zips = Classify(files)
	return docs, zips, nil
}

// Classify sorts the files of a pack output, paths or URLs, into its top
// dump documents, in the order they apply, and its packages.
func Classify(files []string) (docs, zips []string) {
	var parts []string
	caps := map[string]string{}
	for _, p := range files {
		switch {
		case IsZip(p):
			zips = append(zips, p)
		case strings.HasSuffix(p, ".xml"):
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
	return docs, zips
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
				if part, err := resourcesync.Resolve(context.Background(), doc.Loc, u.Loc); err == nil {
					listed[part] = true
				}
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
