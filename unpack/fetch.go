package unpack

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"math"
	"net/http"
	"os"
	"path"

	"github.com/rsdump/rsdump/internal/digest"
	"github.com/rsdump/rsdump/resourcesync"
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
	if errors.Is(err, fs.ErrNotExist) {
		f.Check, f.Msg = verify.CheckMissing, "package is missing"
	}
	rep.Report(f)
	return nil
}

// download fetches a package with one sequential GET into the cache. A
// later engine (rsdump get: mirrors, pieces, resume) replaces this; until
// then it is small but never trusts what it received unchecked.
func (u *unpacker) download(ctx context.Context, ref verify.PackageRef, rep *verify.Reporter) (source, bool, error) {
	resp, err := verify.Get(ctx, u.opts.Client, ref.Loc, "")
	if err != nil {
		return source{}, false, u.openFailed(ctx, ref, rep, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return source{}, false, u.openFailed(ctx, ref, rep, errors.New("HTTP "+resp.Status))
	}
	f, name, err := u.cacheFile(ref.Loc)
	if err != nil {
		return source{}, false, err
	}
	src := source{ra: f, verified: true, close: func() { f.Close(); u.dest.root.Remove(name) }}
	n, err := copyChecked(f, resp.Body, ref, rep)
	if err != nil {
		src.close()
		return source{}, false, u.openFailed(ctx, ref, rep, err)
	}
	if n < 0 {
		src.close()
		return source{}, false, nil
	}
	src.size = n
	return src, true, nil
}

// cacheFile creates a new file in the cache for a download of loc. The
// name is unique, not just derived from loc: a document may list one URL
// twice, and two jobs sharing a file would truncate each other's verified
// package.
func (u *unpacker) cacheFile(loc string) (*os.File, string, error) {
	sum := sha256.Sum256([]byte(loc))
	for {
		name := path.Join(verify.StateDir, cacheDir, hex.EncodeToString(sum[:8])+"-"+rand.Text()+".zip")
		f, err := u.dest.root.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
		if !errors.Is(err, fs.ErrExist) {
			return f, name, err
		}
	}
}

// copyChecked copies a download and checks its length and hash against the
// dump document. It returns n < 0 with a nil error when they differ, after
// reporting it.
func copyChecked(w io.Writer, r io.Reader, ref verify.PackageRef, rep *verify.Reporter) (int64, error) {
	mh, _ := digest.NewMulti(ref.Want.Known()...)
	limit := int64(math.MaxInt64)
	if ref.Length >= 0 {
		limit = ref.Length + 1 // one more byte shows a longer body
	}
	n, err := io.Copy(io.MultiWriter(w, mh), io.LimitReader(r, limit))
	if err != nil {
		return 0, err
	}
	base := verify.Finding{Severity: verify.Error, Source: ref.Loc, URI: ref.Entry.Loc}
	if ref.Length >= 0 && n != ref.Length {
		base.Check, base.Expected, base.Actual, base.Msg = verify.CheckLength, itoa(ref.Length), itoa(n), "downloaded package length differs from the dump document"
		rep.Report(base)
		return -1, nil
	}
	_, bad, _ := digest.Check(ref.Want, mh.Sums())
	for _, m := range bad {
		f := base
		f.Check, f.Expected, f.Actual, f.Msg = verify.CheckHash, m.Alg+":"+m.Want, m.Alg+":"+m.Got, "downloaded package differs from the dump document"
		rep.Report(f)
	}
	if len(bad) > 0 {
		return -1, nil
	}
	return n, nil
}
