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

	"github.com/rsdump/rsdump/internal/digest"
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
	f := verify.Finding{Severity: verify.Error, Check: verify.CheckRead, Source: ref.Loc, URI: ref.Entry.Loc, Msg: verify.MsgFor(err, ref.Loc)}
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
	f, err := remoteFile(ctx, u.getter(), ref)
	if err != nil {
		return source{}, false, u.openFailed(ctx, ref, rep, err)
	}
	g := u.getter()
	dir, err := u.cacheDir(ref)
	if err != nil {
		return source{}, false, err
	}
	drop := func() { u.dest.root.RemoveAll(dir) }
	res, err := g.Get(ctx, filepath.Join(u.dest.dir, filepath.FromSlash(dir)), []transfer.File{f})
	if err != nil {
		drop()
		return source{}, false, u.openFailed(ctx, ref, rep, err)
	}
	fh, err := u.dest.root.Open(path.Join(dir, f.Name))
	if err != nil {
		drop()
		return source{}, false, err
	}
	return source{ra: fh, size: res[0].Size, verified: checkedAll(f, ref.Want), close: func() { fh.Close(); drop() }}, true, nil
}

// remoteFile describes a remote package to the transfer engine: from its
// dump document's entry, or for a package given on its own from what its
// server says (RFC 6249), with what the caller knows of its length and
// hash.
func remoteFile(ctx context.Context, g *transfer.Getter, ref verify.PackageRef) (transfer.File, error) {
	if ref.Doc != "" {
		return g.FileFromEntry(ctx, ref.Doc, ref.Entry)
	}
	if len(ref.Want) > 0 && len(ref.Want.Known()) == 0 {
		// Only hashes rsdump cannot compute: the engine refuses the file
		// before any request, the probe of its server included.
		return transfer.File{Name: path.Base(ref.Loc), Size: ref.Length, Unverifiable: ref.Want.Algs()}, nil
	}
	fs, err := g.Resolve(ctx, ref.Loc)
	if err != nil {
		return transfer.File{}, err
	}
	f := fs[0]
	if s, ok := ref.Want.Strongest(); ok {
		// What the caller knows (the dump's hash) outranks what the
		// server says of its own bytes in a Digest header.
		f.HashAlg, f.Hash = s.Alg, s.Hex
	}
	if ref.Length >= 0 && f.Size < 0 {
		f.Size = ref.Length
	}
	return f, nil
}

// checkedAll reports whether the engine, by checking f's hash, checked
// every hash the dump document gives for the package; otherwise unpack
// hashes the package as it reads it.
func checkedAll(f transfer.File, want digest.Set) bool {
	known := want.Known()
	return f.HashAlg != "" && (len(known) == 0 || len(known) == 1 && known[0] == f.HashAlg)
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
