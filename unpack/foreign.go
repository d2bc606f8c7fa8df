package unpack

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/rsdump/rsdump/deststate"
	"github.com/rsdump/rsdump/finding"
	"github.com/rsdump/rsdump/pkgread"
	"github.com/rsdump/rsdump/resourcesync"
)

// ErrForeign is a first run into a directory that holds files at the
// names its bitstreams land on: rsdump has never written there, so none
// of them is rsdump's to replace or adopt without being told.
var ErrForeign = errors.New("the directory holds files rsdump did not write at the bitstreams' names")

// ForeignError names the files a first run would have replaced: how
// many, and the first ForeignNamed of them.
type ForeignError struct {
	Dir   string   // the tree, absolute
	Path  string   // the first file, relative to it
	Paths []string // the first ForeignNamed files, relative to Dir, Path first
	Count int      // how many in all
}

// ForeignNamed is how many of the files a ForeignError names.
const ForeignNamed = 10

func (e *ForeignError) Error() string {
	const advice = "nothing was written; --adopt takes the files that already hold their bitstream as rsdump's, --overwrite replaces the others too"
	if e.Count <= 1 {
		return fmt.Sprintf("%s already exists, and rsdump has never written in %s (it has no state there): %s",
			filepath.Join(e.Dir, filepath.FromSlash(e.Path)), e.Dir, advice)
	}
	named := strings.Join(e.Paths, ", ")
	if more := e.Count - len(e.Paths); more > 0 {
		named += fmt.Sprintf(" and %d more", more)
	}
	return fmt.Sprintf("%s: %d files already exist at the bitstreams' names (%s), and rsdump has never written there (it has no state there): %s",
		e.Dir, e.Count, named, advice)
}

// Unwrap makes errors.Is(err, ErrForeign) hold.
func (e *ForeignError) Unwrap() error { return ErrForeign }

// foreign collects the files a first run finds at its targets.
type foreign struct {
	dir   string
	paths []string
	count int
}

func (f *foreign) add(target string) {
	f.count++
	if len(f.paths) < ForeignNamed {
		f.paths = append(f.paths, target)
	}
}

// err is the ForeignError of what was found, or nil.
func (f *foreign) err() error {
	if f.count == 0 {
		return nil
	}
	return &ForeignError{Dir: f.dir, Path: f.paths[0], Paths: f.paths, Count: f.count}
}

// guardFresh refuses, before anything lands, a first run into a directory
// that holds a file at one of the targets of refs that pick takes (nil:
// every target): rsdump did not write it. It reads the packages'
// manifests only (planManifest), quietly: the run itself reports their
// problems.
func (u *unpacker) guardFresh(ctx context.Context, refs []pkgread.PackageRef, pick func(target string) bool) error {
	if !u.needsGuard() {
		return nil
	}
	found := &foreign{dir: u.dest.dir}
	for _, ref := range refs {
		pkg, err := u.planManifest(ctx, ref, finding.NewReporter(nil))
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil || pkg == nil {
			continue // reported when the package is unpacked
		}
		for _, b := range pkg.Bitstreams {
			if t, ok := u.foreignTarget(b.URL); ok && (pick == nil || pick(t)) {
				found.add(t)
			}
		}
	}
	return found.err()
}

// needsGuard says whether the run is a first one, into a directory that
// holds anything but rsdump's own, and was not told to adopt.
func (u *unpacker) needsGuard() bool {
	root := u.dest.root
	if u.opts.Adopt || !u.dest.st.Fresh() || root == nil {
		return false
	}
	f, err := root.Open(".")
	if err != nil {
		return false
	}
	defer f.Close()
	for {
		names, err := f.Readdirnames(16)
		for _, n := range names {
			if n != deststate.DirName {
				return true
			}
		}
		if err != nil {
			return false
		}
	}
}

// foreignTarget is the target of entry url when a file is there already
// (not a deletion's).
func (u *unpacker) foreignTarget(url resourcesync.URL) (string, bool) {
	if url.MD != nil && url.MD.Change == resourcesync.ChangeDeleted {
		return "", false
	}
	target, err := u.opts.Mapper.Target(url)
	if err != nil {
		return "", false // refused when the bitstream is unpacked
	}
	if _, err := u.dest.root.Lstat(target); err == nil {
		return target, true
	}
	return "", false
}

// planManifest reads a package's manifest without its bitstreams: a local
// package's from the package, a remote one's from its detached copy
// (rel="contents"), else from the package read by ranges, its central
// directory and manifest entry only. It is nil when the manifest was
// reported unusable.
func (u *unpacker) planManifest(ctx context.Context, ref pkgread.PackageRef, rep *finding.Reporter) (*pkgread.Package, error) {
	lim := u.opts.Limits
	if resourcesync.Trust(ctx) != nil {
		return u.signedManifest(ctx, ref, rep)
	}
	if !resourcesync.IsURL(ref.Loc) {
		ra, size, closeFn, err := pkgread.OpenLocation(ref.Loc)
		if err != nil {
			return nil, err
		}
		defer closeFn()
		return rejected(pkgread.OpenPackage(ra, size, ref.Loc, ref.Cap, lim, rep))
	}
	if ref.Contents != "" {
		rc, err := u.docs.Open(ctx, ref.Contents)
		if err == nil {
			defer rc.Close()
			return rejected(pkgread.ReadManifest(rc, ref.Loc, ref.Cap, lim, rep))
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
	}
	rng, err := u.remote.Ranges(ctx, ref)
	if err != nil {
		return nil, err
	}
	return rejected(pkgread.OpenPackage(rng, rng.Size(), ref.Loc, ref.Cap, lim, rep))
}

// signedManifest is planManifest under a trust: the manifest inside a
// package read in part is covered by nothing signed (the package's hash,
// which a signed document gives, is checked only over the whole
// package), so the manifest is the detached copy, a document read only
// once its own signature verified.
func (u *unpacker) signedManifest(ctx context.Context, ref pkgread.PackageRef, rep *finding.Reporter) (*pkgread.Package, error) {
	if ref.Contents == "" {
		return nil, fmt.Errorf("%s: its manifest cannot be authenticated without reading the whole package: the dump document links no detached manifest (rel=\"contents\")", ref.Loc)
	}
	rc, err := u.docs.Open(ctx, ref.Contents)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return rejected(pkgread.ReadManifest(rc, ref.Loc, ref.Cap, u.opts.Limits, rep))
}

// rejected turns a manifest reported unusable into no package and no
// error.
func rejected(pkg *pkgread.Package, err error) (*pkgread.Package, error) {
	if errors.Is(err, pkgread.ErrRejected) {
		return nil, nil
	}
	return pkg, err
}
