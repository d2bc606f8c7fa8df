package verify

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"strconv"

	"github.com/rsdump/rsdump/finding"
	"github.com/rsdump/rsdump/internal/digest"
	"github.com/rsdump/rsdump/pkgread"
	"github.com/rsdump/rsdump/resourcesync"
)

// checkPackage verifies one package: its length and hash against the dump
// document, its archive and manifest, every bitstream in one front-to-back
// pass, and the detached manifest.
func (v *verifier) checkPackage(ctx context.Context, j job) error {
	ref := j.ref
	m := pkgread.NewMeter(v.opts.Events, ref)
	defer m.Finish()
	ra, size, closeFn, err := v.openPackage(ctx, ref)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		v.missing(ref, err)
		return nil
	}
	defer closeFn()
	m.Opened(size, v.opts.Events)
	v.packages.Add(1)
	v.checkLength(ref, size)
	var ph *pkgread.PassHasher
	mh, _ := digest.NewMulti(ref.Want.Known()...)
	if len(ref.Want) > 0 {
		ph = pkgread.NewPassHasher(ra, size, mh)
		ra = ph
	}
	pkg, err := pkgread.OpenPackage(ra, size, ref.Loc, ref.Cap, v.opts.Limits, v.rep)
	var manifestSum [sha256.Size]byte
	if err == nil {
		// Its hash is enough to find the detached copy the same; the bytes,
		// up to 50 MB, are read again only when it is not.
		manifestSum, pkg.Manifest = sha256.Sum256(pkg.Manifest), nil
		v.claim(j, pkg)
		if err := v.readAll(ctx, pkg, ph, m); err != nil {
			return err
		}
	}
	if ph != nil {
		v.checkPackageHash(ref, ph, mh)
	} else if ref.Doc != "" {
		v.rep.Report(finding.Finding{Severity: finding.Warning, Code: finding.CheckPackage, Source: ref.Loc, URI: ref.Entry.Loc, Msg: ref.Doc + " gives no hash for the package"})
	}
	if pkg != nil && ref.Contents != "" {
		v.checkDetached(ctx, ref, pkg, manifestSum)
	}
	return nil
}

// claim records the targets of a Resource Dump's package, for
// reportClashes. A target is the bitstream's URI, percent-decoded.
func (v *verifier) claim(j job, pkg *pkgread.Package) {
	if j.ref.Doc == "" || pkg.Header.MD.Capability != resourcesync.CapResourceDumpManifest {
		return
	}
	for _, b := range pkg.Bitstreams {
		if b.Path == "" {
			continue
		}
		target, err := url.PathUnescape(b.URL.Loc)
		if err != nil {
			target = b.URL.Loc
		}
		j.claims.Claim(pkgread.Target{Pkg: j.pkg, N: b.N, Name: target, Length: b.Length, Want: b.Want, URI: b.URL.Loc, Path: pkgread.EntryName(b.Path)})
	}
}

// reportClashes reports, once every package of a dump has claimed its
// targets, each one another package carries with other content (but the
// first claim, which the others name) and each name that differs from
// another only by case or Unicode normalisation.
func (v *verifier) reportClashes(c *pkgread.Claims) error {
	return c.Resolve(func(cl pkgread.Claimed, clash pkgread.Clash) {
		sev := finding.Warning
		switch {
		case clash.Kind == pkgread.ClashContent && clash.First:
			return
		case clash.Kind == pkgread.ClashContent:
			sev = finding.Error
		}
		v.rep.Report(finding.Finding{Severity: sev, Code: finding.CheckClash, Source: cl.Package, URI: cl.URI, Path: cl.Path, Msg: clash.Message()})
	})
}

// missing reports a package that cannot be opened. A package listed by a
// dump document but absent is a finding; so is any other failure to open
// it, since the run can go on with the other packages.
func (v *verifier) missing(ref pkgread.PackageRef, err error) {
	f := finding.Finding{Severity: finding.Error, Code: finding.CheckRead, Source: ref.Loc, URI: ref.Entry.Loc, Msg: finding.MsgFor(err, ref.Loc)}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		f.Code, f.Msg = finding.CheckMissing, "package listed in "+ref.Doc+" is missing"
	case errors.Is(err, pkgread.ErrPackageHash):
		f.Code = finding.CheckHash
	}
	v.rep.Report(f)
}

func (v *verifier) checkLength(ref pkgread.PackageRef, size int64) {
	if ref.Length >= 0 && ref.Length != size {
		v.rep.Report(finding.Finding{Severity: finding.Error, Code: finding.CheckLength, Source: ref.Loc, URI: ref.Entry.Loc,
			Expected: strconv.FormatInt(ref.Length, 10), Actual: strconv.FormatInt(size, 10), Msg: "package length differs from " + ref.Doc})
	}
}

// readAll reads every bitstream in ZIP order, which is the order of the
// data in the file, and records an OK finding for each one verified.
func (v *verifier) readAll(ctx context.Context, pkg *pkgread.Package, ph *pkgread.PassHasher, m *pkgread.Meter) error {
	if ph != nil {
		ph.Start()
	}
	for _, b := range pkg.InZipOrder() {
		if err := ctx.Err(); err != nil {
			return err
		}
		w, done := m.Bitstream(b)
		res := pkg.Read(b, w)
		done()
		v.bitstreams.Add(1)
		v.bytes.Add(res.Length)
		if !res.Severity.Problem() {
			v.verified.Add(1)
			v.rep.Report(finding.Finding{Severity: finding.OK, Code: finding.CheckBitstream, Source: pkg.Source, URI: b.URL.Loc, Path: b.File.Name,
				Expected: pkgread.Describe(b.Length, b.Want), Actual: pkgread.Describe(res.Length, res.Sums)})
		}
	}
	pkg.CheckLayout()
	return nil
}

func (v *verifier) checkPackageHash(ref pkgread.PackageRef, ph *pkgread.PassHasher, mh *digest.Multi) {
	base := finding.Finding{Source: ref.Loc, URI: ref.Entry.Loc}
	if err := ph.Finish(); err != nil {
		base.Severity, base.Code, base.Msg = finding.Error, finding.CheckRead, err.Error()
		v.rep.Report(base)
		return
	}
	ok, bad, unchecked := digest.Check(ref.Want, mh.Sums())
	for _, m := range bad {
		f := base
		f.Severity, f.Code, f.Expected, f.Actual, f.Msg = finding.Error, finding.CheckHash, m.Alg+":"+m.Want, m.Alg+":"+m.Got, "package "+m.Alg+" differs from "+ref.Doc
		v.rep.Report(f)
	}
	switch {
	case len(bad) > 0:
	case len(ok) == 0:
		f := base
		f.Severity, f.Code, f.Msg = finding.Unverified, finding.CheckPackage, fmt.Sprintf("rsdump cannot compute the package hashes %v", unchecked)
		v.rep.Report(f)
	default:
		f := base
		f.Severity, f.Code, f.Expected, f.Actual = finding.OK, finding.CheckPackage, pkgread.Describe(ref.Length, ref.Want), pkgread.Describe(mh.Len(), mh.Sums())
		v.rep.Report(f)
	}
}

func (v *verifier) checkDetached(ctx context.Context, ref pkgread.PackageRef, pkg *pkgread.Package, sum [sha256.Size]byte) {
	data, err := fetchLinked(ctx, v.opts.Client, v.opener, ref, ref.Contents)
	if err != nil {
		v.rep.Report(finding.Finding{Severity: finding.Error, Code: finding.CheckDetached, Source: ref.Loc, URI: ref.Entry.Loc, Path: ref.Contents, Msg: "detached manifest cannot be read: " + err.Error()})
		return
	}
	if sha256.Sum256(data) == sum {
		return
	}
	inside, err := pkg.ReadManifest()
	if err != nil {
		v.rep.Report(finding.Finding{Severity: finding.Error, Code: finding.CheckDetached, Source: ref.Loc, URI: ref.Entry.Loc, Path: ref.Contents, Msg: "detached manifest differs from manifest.xml, which cannot be read again to compare: " + err.Error()})
		return
	}
	if f, differ := CompareManifests(inside, data); differ {
		f.Source, f.URI, f.Path = ref.Loc, ref.Entry.Loc, ref.Contents
		v.rep.Report(f)
	}
}

// openPackage opens a package through the run's Opener.
func (v *verifier) openPackage(ctx context.Context, ref pkgread.PackageRef) (io.ReaderAt, int64, func() error, error) {
	ra, size, _, closeFn, err := v.opener.Open(ctx, ref)
	return ra, size, closeFn, err
}

// fetchLinked reads a document the package's entry links to, from the
// first place that answers: the link itself, or the same name beside one
// of the package's other mirrors.
func fetchLinked(ctx context.Context, client *http.Client, packages pkgread.Opener, ref pkgread.PackageRef, href string) ([]byte, error) {
	hrefs, err := packages.Copies(ctx, ref, href)
	if err != nil {
		return nil, err
	}
	for _, h := range hrefs {
		var data []byte
		if data, err = pkgread.ReadDocument(ctx, client, h); err == nil || ctx.Err() != nil {
			return data, err
		}
	}
	return nil, err
}
