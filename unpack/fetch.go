package unpack

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"

	"github.com/rsdump/rsdump/finding"
	"github.com/rsdump/rsdump/pkgread"
	"github.com/rsdump/rsdump/transfer"
)

// source is an opened package.
type source struct {
	ra       io.ReaderAt
	size     int64
	verified bool // length and hash are checked by the download (once wait returned nil)
	wait     func() error
	close    func()
	release  func(off int64) // the reader is done with the bytes before off (pkgfetch.Opened.Release)
	keepDir  string          // where the download's resume record stays across runs, if it does
}

// open opens a package for reading. A remote package is fetched by the
// transfer engine, from every mirror its document names, into its own
// directory in DIR/.rsdump/cache (a dry run, which writes nothing in
// DIR, uses the system's temporary directory), and read while it
// arrives: every byte read has matched its piece hash, and the package
// is applied only once wait says it matched the dump document's length
// and hash too (pkgfetch.Remote.Stream). Problems are reported and give
// ok=false; the error is for a cancelled context.
func (u *unpacker) open(ctx context.Context, ref pkgread.PackageRef, rep *finding.Reporter) (src source, ok bool, err error) {
	o, err := u.remote.Stream(ctx, ref)
	if err != nil {
		return source{}, false, u.openFailed(ctx, ref, rep, err)
	}
	src = source{ra: o.ReaderAt, size: o.Size, verified: o.Checked, wait: o.Wait, close: func() { o.Close() }}
	if o.Held {
		src.release = o.Release
		if u.remote.Resume {
			src.keepDir = o.Dir
		}
	}
	return src, true, nil
}

func (u *unpacker) openFailed(ctx context.Context, ref pkgread.PackageRef, rep *finding.Reporter, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	f := finding.Finding{Severity: finding.Error, Code: finding.CheckRead, Source: ref.Loc, URI: ref.Entry.Loc, Msg: finding.MsgFor(err, ref.Loc)}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		f.Code, f.Msg = finding.CheckMissing, "package is missing"
	case errors.Is(err, transfer.ErrFileHash):
		f.Code = finding.CheckHash
	}
	rep.Report(f)
	return nil
}

// plannedManifest is the manifest a dry run plans a remote package by:
// the copy of its detached manifest the survey kept, else planManifest's.
func (p *pkgRun) plannedManifest(ctx context.Context) (*pkgread.Package, error) {
	if p.claimed.detached != "" {
		if f, err := os.Open(p.claimed.detached); err == nil {
			defer f.Close()
			return rejected(pkgread.ReadManifest(f, p.ref.Loc, p.ref.Cap, p.u.opts.Limits, p.rep))
		}
	}
	return p.u.planManifest(ctx, p.ref, p.rep)
}

// planRemote plans a remote package for a dry run, which reads no package
// body: its manifest comes from the detached copy the dump document links
// (rel="contents"), else from the package read by ranges, its central
// directory and manifest entry only. Problems are reported; the error is
// for a cancelled context.
func (p *pkgRun) planRemote(ctx context.Context) error {
	pkg, err := p.plannedManifest(ctx)
	if err != nil {
		return p.u.openFailed(ctx, p.ref, p.rep, err)
	}
	if pkg == nil {
		return nil // reported
	}
	p.u.count(func(r *Result) { r.Packages++ })
	return p.planPackage(pkg)
}
