package unpack

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"path"
	"path/filepath"

	"github.com/rsdump/rsdump/resourcesync"
	"github.com/rsdump/rsdump/transfer"
	"github.com/rsdump/rsdump/verify"
)

// source is an opened package.
type source struct {
	ra       io.ReaderAt
	size     int64
	verified bool // length and hash were checked while it was downloaded
	close    func()
}

// open opens a package for reading. A remote package is downloaded into
// DIR/.rsdump/cache first, hashed on the way and checked against the dump
// document's length and hash before anything in it is used; a dry run
// reads only its manifest, through Range requests. Problems are reported
// and give ok=false; the error is for a cancelled context.
func (u *unpacker) open(ctx context.Context, ref verify.PackageRef, rep *verify.Reporter) (src source, ok bool, err error) {
	if resourcesync.IsURL(ref.Loc) && !u.opts.DryRun {
		return u.download(ctx, ref, rep)
	}
	ra, size, closeFn, err := verify.OpenLocation(ctx, u.opts.Client, ref.Loc)
	if err != nil {
		return source{}, false, u.openFailed(ctx, ref, rep, err)
	}
	return source{ra: ra, size: size, close: func() { closeFn() }}, true, nil
}

func (u *unpacker) openFailed(ctx context.Context, ref verify.PackageRef, rep *verify.Reporter, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	f := verify.Finding{Severity: verify.Error, Check: verify.CheckRead, Source: ref.Loc, URI: ref.Entry.Loc, Msg: err.Error()}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		f.Check, f.Msg = verify.CheckMissing, "package is missing"
	case errors.Is(err, transfer.ErrFileHash):
		f.Check = verify.CheckHash
	}
	rep.Report(f)
	return nil
}

// download fetches a package through the transfer engine, from its <loc>,
// every rel="duplicate" mirror and the pieces of a linked Metalink, into
// its own directory in DIR/.rsdump/cache. The engine publishes it only
// when its length and strongest hash match the dump document; with no
// hash, unpack hashes it as it reads it.
func (u *unpacker) download(ctx context.Context, ref verify.PackageRef, rep *verify.Reporter) (source, bool, error) {
	dir, err := u.cacheDir(ref)
	if err != nil {
		return source{}, false, err
	}
	drop := func() { u.dest.root.RemoveAll(dir) }
	d, err := verify.Download(ctx, u.getter(), ref, filepath.Join(u.dest.dir, filepath.FromSlash(dir)))
	if err != nil {
		drop()
		return source{}, false, u.openFailed(ctx, ref, rep, err)
	}
	rel, err := filepath.Rel(u.dest.dir, d.Path)
	if err != nil {
		drop()
		return source{}, false, err
	}
	fh, err := u.dest.root.Open(filepath.ToSlash(rel))
	if err != nil {
		drop()
		return source{}, false, err
	}
	return source{ra: fh, size: d.Size, verified: d.Checked, close: func() { fh.Close(); drop() }}, true, nil
}

// getter is the transfer engine shared by the run's downloads, so that
// they share one connection budget.
func (u *unpacker) getter() *transfer.Getter {
	u.getOnce.Do(func() {
		o := u.opts.Transfer
		if o.Client == nil {
			o.Client = u.opts.Client
		}
		u.get = transfer.New(o)
	})
	return u.get
}

// cacheDir creates a new directory in the cache for a download. The name
// is unique, not just derived from loc: a document may list one URL twice,
// and two jobs sharing a file would truncate each other's package.
func (u *unpacker) cacheDir(ref verify.PackageRef) (string, error) {
	sum := sha256.Sum256([]byte(ref.Loc))
	for {
		name := path.Join(verify.StateDir, cacheDir, hex.EncodeToString(sum[:8])+"-"+rand.Text())
		err := u.dest.root.Mkdir(name, 0o755)
		if !errors.Is(err, fs.ErrExist) {
			return name, err
		}
	}
}
