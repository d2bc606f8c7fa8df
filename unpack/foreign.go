package unpack

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/rsdump/rsdump/deststate"
	"github.com/rsdump/rsdump/finding"
	"github.com/rsdump/rsdump/pkgread"
	"github.com/rsdump/rsdump/resourcesync"
)

// ErrForeign is a first run into a directory that holds files at the
// names its bitstreams land on: rsdump has never written there, so none
// of them is rsdump's to replace or adopt without being told.
var ErrForeign = errors.New("the directory holds files rsdump did not write at the bitstreams' names")

// ForeignError names the first file a first run would have replaced.
type ForeignError struct {
	Dir  string // the tree, absolute
	Path string // the file, relative to it
}

func (e *ForeignError) Error() string {
	return fmt.Sprintf("%s already exists, and rsdump has never written in %s (it has no state there): nothing was written; --adopt takes the files that already hold their bitstream as rsdump's, --overwrite replaces the others too",
		filepath.Join(e.Dir, filepath.FromSlash(e.Path)), e.Dir)
}

// Unwrap makes errors.Is(err, ErrForeign) hold.
func (e *ForeignError) Unwrap() error { return ErrForeign }

// guardFresh refuses, before anything lands, a first run into a directory
// that holds a file at one of the targets of refs: rsdump did not write
// it. It reads the packages' manifests only (planManifest), quietly: the
// run itself reports their problems.
func (u *unpacker) guardFresh(ctx context.Context, refs []pkgread.PackageRef) error {
	if !u.needsGuard() {
		return nil
	}
	for _, ref := range refs {
		pkg, err := u.planManifest(ctx, ref, finding.NewReporter(nil))
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil || pkg == nil {
			continue // reported when the package is unpacked
		}
		for _, b := range pkg.Bitstreams {
			if err := u.guardTarget(b.URL); err != nil {
				return err
			}
		}
	}
	return nil
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

// guardTarget is ForeignError when the target of entry u is taken.
func (u *unpacker) guardTarget(url resourcesync.URL) error {
	if url.MD != nil && url.MD.Change == resourcesync.ChangeDeleted {
		return nil
	}
	target, err := u.opts.Mapper.Target(url)
	if err != nil {
		return nil // refused when the bitstream is unpacked
	}
	if _, err := u.dest.root.Lstat(target); err == nil {
		return &ForeignError{Dir: u.dest.dir, Path: target}
	}
	return nil
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
