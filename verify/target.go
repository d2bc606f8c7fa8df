package verify

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/rsdump/rsdump/finding"
	"github.com/rsdump/rsdump/internal/sink"
	"github.com/rsdump/rsdump/pkgread"
	"github.com/rsdump/rsdump/resourcesync"
	"github.com/rsdump/rsdump/s3"
)

// expand turns a target into the packages to verify, loading and checking
// dump documents on the way.
func (v *verifier) expand(ctx context.Context, t string) ([]pkgread.PackageRef, error) {
	if s3Prefix(t) {
		return v.scanBucket(ctx, t)
	}
	if pkgread.IsZip(t) {
		if err := resourcesync.RefuseAlone(ctx, t); err != nil {
			return nil, err
		}
	}
	if resourcesync.IsURL(t) {
		if pkgread.IsZip(t) {
			return []pkgread.PackageRef{standalone(t)}, nil
		}
		return v.loadDump(ctx, t)
	}
	fi, err := os.Stat(t)
	switch {
	case err != nil:
		return nil, err
	case fi.IsDir():
		return v.scanDir(ctx, t)
	case pkgread.IsZip(t):
		return []pkgread.PackageRef{standalone(t)}, nil
	}
	return v.loadDump(ctx, t)
}

// standalone is a package given without a dump document: nothing is known
// of its length or hash, and either manifest capability is accepted.
func standalone(loc string) pkgread.PackageRef { return pkgread.PackageRef{Loc: loc, Length: -1} }

// scanDir verifies the dump documents in dir and the packages they list.
// Packages no document lists are verified on their own, with a warning
// when there were documents: a package left behind by an interrupted
// publication, or one the document forgot.
func (v *verifier) scanDir(ctx context.Context, dir string) ([]pkgread.PackageRef, error) {
	docs, zips, err := pkgread.ListDir(dir)
	if err != nil {
		return nil, err
	}
	return v.scanned(ctx, dir, docs, zips)
}

// s3Prefix says whether t names an S3 prefix, as pack's -o takes one,
// rather than a document or package object.
func s3Prefix(t string) bool {
	lower := strings.ToLower(t)
	return strings.HasPrefix(lower, s3.Scheme+"://") && !strings.HasSuffix(lower, ".xml") && !pkgread.IsZip(lower)
}

// scanBucket is scanDir for s3://BUCKET/PREFIX, a pack output in a
// bucket: the objects directly under the prefix.
func (v *verifier) scanBucket(ctx context.Context, loc string) ([]pkgread.PackageRef, error) {
	b, err := sink.OpenBucket(ctx, loc, v.opts.Client)
	if err != nil {
		return nil, err
	}
	var locs []string
	err = b.List(ctx, "", func(in sink.Info) error {
		if !strings.Contains(in.Name, "/") {
			locs = append(locs, b.Loc(in.Name))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	docs, zips := pkgread.Classify(locs)
	return v.scanned(ctx, loc, docs, zips)
}

// scanned is the packages of a pack output's documents and, with a
// warning, those no document lists.
func (v *verifier) scanned(ctx context.Context, dir string, docs, zips []string) ([]pkgread.PackageRef, error) {
	if len(docs) == 0 && len(zips) == 0 {
		return nil, fmt.Errorf("%s: no dump document and no package", dir)
	}
	var refs []pkgread.PackageRef
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
		if resourcesync.Trust(ctx) != nil {
			v.rep.Report(finding.Finding{Severity: finding.Error, Code: finding.CheckDocument, Source: z, Msg: "package is not listed in any dump document in " + dir + ", and so " + resourcesync.ErrUnauthenticated.Error() + "; not checked"})
			continue
		}
		if len(docs) > 0 {
			v.rep.Report(finding.Finding{Severity: finding.Warning, Code: finding.CheckDocument, Source: z, Msg: "package is not listed in any dump document in " + dir})
		}
		refs = append(refs, standalone(z))
	}
	return refs, nil
}
