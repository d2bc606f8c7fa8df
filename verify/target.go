package verify

import (
	"context"
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
	docs, zips, err := listDir(dir)
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

// listDir finds the top dump documents (not the parts of an index, which
// the index covers) and the packages in dir.
func listDir(dir string) (docs, zips []string, err error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, err
	}
	var parts []string
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		switch {
		case !e.Type().IsRegular():
		case isZip(e.Name()):
			zips = append(zips, p)
		case strings.HasSuffix(e.Name(), ".xml"):
			isDump, isPart := peekDump(p)
			if isDump && isPart {
				parts = append(parts, p)
			} else if isDump {
				docs = append(docs, p)
			}
		}
	}
	if len(docs) == 0 {
		docs = parts
	}
	sort.Strings(docs)
	return docs, zips, nil
}

// peekDump reads only the header of an XML file to tell whether it is a
// dump document, and whether it is part of an index.
func peekDump(path string) (isDump, isPart bool) {
	f, err := os.Open(path)
	if err != nil {
		return false, false
	}
	defer f.Close()
	d, err := resourcesync.NewDecoder(f)
	if err != nil {
		return false, false
	}
	h := d.Header()
	_, isPart = h.Link("index")
	c := h.MD.Capability
	return c == resourcesync.CapResourceDump || c == resourcesync.CapChangeDump, isPart
}
