package unpack

import (
	"context"
	"errors"
	"io"

	"golang.org/x/sync/errgroup"

	"github.com/rsdump/rsdump/internal/digest"
	"github.com/rsdump/rsdump/internal/httpc"
	"github.com/rsdump/rsdump/resourcesync"
	"github.com/rsdump/rsdump/verify"
)

// claimed is a package's place in the table of the targets its dump's
// packages carry; the zero value is a package unpacked on its own.
type claimed struct {
	claims *verify.Claims
	pkg    int
}

// survey reads the manifest of every package of a Resource Dump before
// any is unpacked and records each target in one table: when two packages
// carry a target with different content, both are refused it, rather than
// the one that happens to finish last winning. Names that differ only by
// case or Unicode normalisation are warned of here. A package that cannot
// be read now is left for its own run to report.
func (u *unpacker) survey(ctx context.Context, refs []verify.PackageRef) ([]claimed, error) {
	out := make([]claimed, len(refs))
	if len(refs) < 2 {
		return out, nil
	}
	c := verify.NewClaims()
	for i, ref := range refs {
		out[i] = claimed{claims: c, pkg: c.AddPackage(ref.Loc)}
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(u.opts.Jobs)
	for i, ref := range refs {
		g.Go(func() error {
			u.surveyOne(gctx, ref, out[i])
			return gctx.Err()
		})
	}
	return out, g.Wait()
}

// surveyOne claims the targets of one package, from the manifest inside
// it, or for a remote package from the detached manifest it links (the
// package itself is downloaded later, once).
func (u *unpacker) surveyOne(ctx context.Context, ref verify.PackageRef, cl claimed) {
	each := func(n int, url resourcesync.URL, length int64, want digest.Set) {
		target, err := u.opts.Mapper.Target(url)
		if err != nil {
			return
		}
		if c := cl.claims.Claim(cl.pkg, n, target, length, want); c.Kind == verify.ClashFold {
			u.rep.Report(verify.Finding{Severity: verify.Warning, Check: verify.CheckClash, Source: ref.Loc, URI: url.Loc, Path: target, Msg: c.Message()})
		}
	}
	if resourcesync.IsURL(ref.Loc) {
		// Not downloaded twice: without a detached manifest, a remote
		// package claims its targets when it is unpacked.
		if ref.Contents != "" {
			u.surveyDetached(ctx, ref.Contents, each)
		}
		return
	}
	ra, size, closeFn, err := verify.OpenLocation(ref.Loc)
	if err != nil {
		return
	}
	defer closeFn()
	pkg, err := verify.OpenPackage(ra, size, ref.Loc, ref.Cap, u.opts.Limits, verify.NewReporter(nil))
	if err != nil || pkg.Header.MD.Capability != resourcesync.CapResourceDumpManifest {
		return
	}
	pkg.Manifest = nil // not needed here; the survey holds a package's entries while it claims them
	for _, b := range pkg.Bitstreams {
		if !b.Deleted() {
			each(b.N, b.URL, b.Length, b.Want)
		}
	}
}

// surveyDetached reads the entries of a detached Resource Dump Manifest.
func (u *unpacker) surveyDetached(ctx context.Context, loc string, each func(int, resourcesync.URL, int64, digest.Set)) {
	errOther := errors.New("not a Resource Dump Manifest")
	ld := resourcesync.Loader{
		Open: func(ctx context.Context, loc string) (io.ReadCloser, error) {
			return httpc.Open(ctx, u.opts.Client, loc, resourcesync.MaxBytes)
		},
		Document: func(d *resourcesync.Document) error {
			if d.Header.MD.Capability != resourcesync.CapResourceDumpManifest {
				return errOther
			}
			return nil
		},
		Entry: func(_ *resourcesync.Document, n int, url resourcesync.URL) error {
			length, want := int64(-1), digest.Set(nil)
			if url.MD != nil && url.MD.Length != nil {
				length = *url.MD.Length
			}
			if url.MD != nil {
				want, _ = digest.Parse(url.MD.Hash)
			}
			each(n, url, length, want)
			return nil
		},
	}
	ld.Load(ctx, loc) // a manifest that cannot be read is claimed when its package is unpacked
}

// claim checks a target against the survey before it is written: a
// target another package carries with other content is refused. A package
// the survey could not read claims its targets now.
func (p *pkgRun) claim(a *action) bool {
	cl := p.claimed
	if cl.claims == nil || p.isChange() {
		return true
	}
	c := cl.claims.Claim(cl.pkg, a.b.N, a.target, a.b.Length, a.b.Want)
	switch c.Kind {
	case verify.ClashContent:
		p.refuse(a, verify.CheckClash, "not written: "+c.Message())
		return false
	case verify.ClashFold:
		p.rep.Report(verify.Finding{Severity: verify.Warning, Check: verify.CheckClash, Source: p.ref.Loc, URI: a.b.URL.Loc, Path: a.target, Msg: c.Message()})
	}
	return true
}
