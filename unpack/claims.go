package unpack

import (
	"archive/zip"
	"context"
	"crypto/sha256"
	"errors"
	"hash"
	"io"
	"os"
	"path/filepath"
	"slices"

	"golang.org/x/sync/errgroup"

	"github.com/rsdump/rsdump/finding"
	"github.com/rsdump/rsdump/internal/digest"
	"github.com/rsdump/rsdump/internal/entryspool"
	"github.com/rsdump/rsdump/pkgread"
	"github.com/rsdump/rsdump/resourcesync"
)

// claimed is a package's place in the survey of the targets its dump's
// packages carry; the zero value is a package unpacked on its own.
type claimed struct {
	clashes map[entryRef]pkgread.Clash // of every package of the dump; read only
	pkg     int
	// late is the table, for a package the survey could not read: it
	// claims its targets as it is unpacked.
	late *pkgread.Claims
	// dec is the package's manifest as the survey decoded it, so that
	// staging need not decode it again; nil when the survey could not.
	dec *pkgread.Decoded
	// detached is a copy of the detached manifest the survey read, kept
	// for a re-base to plan the package from (rebasePackage), and in a dry
	// run for planning to read, without fetching it again; "" for none.
	detached string
	// resumed is a package of a sharded restore that a worker took over:
	// the one before may have been killed between its renames and their
	// records.
	resumed bool
}

// entryRef names a manifest entry of one of the dump's packages.
type entryRef struct{ pkg, n int }

// survey reads the manifest of every package of a Resource Dump before
// any is unpacked and records each target in one table: when two packages
// carry a target with different content, both are refused it, rather than
// the one that happens to finish last winning, and names that differ only
// by case or Unicode normalisation are warned of. The table is on disk
// (pkgread.Claims); only the clashes stay in memory. A package that cannot
// be read now (a remote one without a detached manifest) claims its
// targets when it is unpacked, so only the later of two clashing packages
// is refused. The entries decoded are spooled to disk beside the table,
// for staging to read instead of decoding each manifest a second time.
// Call the function returned once every package is unpacked.
func (u *unpacker) survey(ctx context.Context, refs []pkgread.PackageRef) ([]claimed, []bool, func(), error) {
	out := make([]claimed, len(refs))
	read := make([]bool, len(refs))
	if len(refs) < 2 && u.rebase == nil {
		return out, read, func() {}, nil
	}
	c := pkgread.NewClaims(u.scratchDir())
	for i, ref := range refs {
		out[i].pkg = c.AddPackage(ref.Loc)
	}
	done := func() {
		c.Close()
		for _, cl := range out {
			if cl.dec != nil {
				os.Remove(cl.dec.Spool)
			}
			if cl.detached != "" {
				os.Remove(cl.detached)
			}
		}
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(u.opts.Jobs)
	for i, ref := range refs {
		g.Go(func() error {
			out[i].dec, out[i].detached, read[i] = u.surveyOne(gctx, ref, c, out[i].pkg)
			return gctx.Err()
		})
	}
	if err := g.Wait(); err != nil {
		done()
		return nil, nil, nil, err
	}
	if slices.Contains(read, false) {
		c.KeepIndex()
	}
	clashes := map[entryRef]pkgread.Clash{}
	err := c.Resolve(func(cl pkgread.Claimed, clash pkgread.Clash) {
		clashes[entryRef{cl.Pkg, cl.N}] = clash
	})
	if err != nil {
		done()
		return nil, nil, nil, err
	}
	for i := range out {
		out[i].clashes = clashes
		if !read[i] {
			out[i].late = c
		}
	}
	return out, read, done, nil
}

// scratchDir is where the survey's table spills: the staging directory a
// later run clears, or the system's temporary directory in a dry run.
func (u *unpacker) scratchDir() string {
	if u.opts.DryRun {
		return os.TempDir()
	}
	return filepath.Join(u.dest.dir, filepath.FromSlash(u.dest.st.Tmp()))
}

// surveyOne claims the targets of one package, streaming its manifest
// through the loader: nothing is kept of an entry in memory but its
// claim, and the entry goes to the package's spool. A remote package's
// come from the detached manifest it links; the package itself is
// downloaded later, once; a re-base and a dry run, which reads no
// package, keep the detached manifest (keepDetached) for planning to
// read. It reports whether it read the manifest to its end, the spool of
// its entries (nil when it did not, or could not spool them), and the
// copy of the detached manifest ("" for none).
func (u *unpacker) surveyOne(ctx context.Context, ref pkgread.PackageRef, c *pkgread.Claims, pkg int) (*pkgread.Decoded, string, bool) {
	errOther := errors.New("not a Resource Dump Manifest")
	var sp *entryspool.Writer[resourcesync.URL, *resourcesync.URL]
	if !u.opts.DryRun && !u.noSpool && u.spooled.Load() < spoolBudget { // a dry run's scratch is the system's, often in memory
		sp, _ = entryspool.Create[resourcesync.URL](u.scratchDir(), manifestSpoolPattern) // without one, staging decodes the manifest
	}
	ld := resourcesync.Loader{
		// A manifest is one <urlset>. An index is not followed: its parts
		// are not in the package, and their entries must neither claim
		// targets nor be spooled as the package's.
		Document: func(d *resourcesync.Document) error {
			if d.Header.MD.Capability != resourcesync.CapResourceDumpManifest || d.Header.Kind != resourcesync.URLSet || d.Index != nil {
				return errOther
			}
			return nil
		},
		Entry: func(_ *resourcesync.Document, n int, url resourcesync.URL) error {
			u.claimEntry(c, pkg, n, url)
			if sp != nil {
				sp.Add(url)
			}
			return nil
		},
	}
	h := sha256.New()
	ok, detached := false, ""
	// A manifest that cannot be read is reported when its package is
	// unpacked.
	switch {
	case !resourcesync.IsURL(ref.Loc):
		ok = u.surveyLocal(ctx, ref.Loc, &ld, h) == nil
	case ref.Contents != "":
		keep := u.keepDetached()
		ld.Open = func(ctx context.Context, loc string) (io.ReadCloser, error) {
			h.Reset()
			w := io.Writer(h)
			if keep != nil && keep.Truncate(0) == nil {
				keep.Seek(0, io.SeekStart)
				w = io.MultiWriter(h, keep)
			}
			rc, err := u.docs.Open(ctx, loc)
			return hashing(rc, w), err
		}
		ok = ld.Load(ctx, ref.Contents) == nil
		detached = keptDetached(keep, ok)
		if detached != "" && u.opts.DryRun {
			fi, _ := os.Stat(detached)
			u.spooled.Add(fi.Size())
		}
	}
	if sp == nil {
		return nil, detached, ok
	}
	if !ok {
		sp.Abort()
		return nil, detached, false
	}
	if sp.Close(entryspool.Source(h.Sum(nil))) != nil {
		return nil, detached, true
	}
	u.spooled.Add(sp.Size())
	return &pkgread.Decoded{Spool: sp.Name()}, detached, true
}

// dryDetachedBudget bounds the copies of detached manifests a dry run's
// survey keeps, in the system's temporary directory (often in memory):
// the manifests of the packages surveyed after it is spent are fetched
// again when they are planned.
var dryDetachedBudget int64 = 256 << 20

// keptDetached closes the copy f of a detached manifest and returns its
// name, or removes it and returns "" when the manifest was not read to
// its end (ok false) or the copy failed.
func keptDetached(f *os.File, ok bool) string {
	if f == nil {
		return ""
	}
	if err := f.Close(); err != nil || !ok {
		os.Remove(f.Name())
		return ""
	}
	return f.Name()
}

// keepDetached creates the file a detached manifest is kept in as the
// survey reads it: for a re-base, and for a dry run within
// dryDetachedBudget (its scratch is the system's, often in memory); nil
// when the run keeps none.
func (u *unpacker) keepDetached() *os.File {
	switch {
	case u.opts.DryRun && u.spooled.Load() >= dryDetachedBudget:
		return nil
	case !u.opts.DryRun && u.rebase == nil:
		return nil
	}
	f, err := os.CreateTemp(u.scratchDir(), detachedPattern)
	if err != nil {
		return nil
	}
	return f
}

// detachedPattern names the detached manifests a re-base keeps.
const detachedPattern = ".rsdump-detached-*.xml"

// manifestSpoolPattern names the survey's spools in the scratch directory.
const manifestSpoolPattern = ".rsdump-manifest-*.tmp"

// spoolBudget bounds the disk the survey's spools take, all written before
// the first package is staged: about 230 bytes an entry, so some nine
// million entries. The manifests of the packages surveyed after it is
// spent are decoded again when they are staged.
var spoolBudget int64 = 2 << 30

// hashing makes rc feed every byte read, to its end, to h: the hash of a
// manifest the decoder read to its end is that of all its bytes.
func hashing(rc io.ReadCloser, h io.Writer) io.ReadCloser {
	if rc == nil {
		return nil
	}
	return struct {
		io.Reader
		io.Closer
	}{io.TeeReader(rc, h), rc}
}

// claimEntry claims the target of one manifest entry, and holds it for
// a snapshot made the tree exactly (rebase).
func (u *unpacker) claimEntry(c *pkgread.Claims, pkg, n int, url resourcesync.URL) {
	if url.MD != nil && url.MD.Change == resourcesync.ChangeDeleted {
		return
	}
	target, err := u.opts.Mapper.Target(url)
	if err != nil {
		return
	}
	if u.rebase != nil {
		u.rebase.add(target)
	}
	length, want := int64(-1), digest.Set(nil)
	if url.MD != nil && url.MD.Length != nil {
		length = *url.MD.Length
	}
	if url.MD != nil {
		want, _ = digest.Parse(url.MD.Hash)
	}
	c.Claim(pkgread.Target{Pkg: pkg, N: n, Name: target, Length: length, Want: want})
}

// surveyLocal streams the manifest inside a local package, through h.
func (u *unpacker) surveyLocal(ctx context.Context, loc string, ld *resourcesync.Loader, h hash.Hash) error {
	rc, err := openManifest(loc)
	if err != nil {
		return err
	}
	defer rc.Close()
	return ld.Read(ctx, loc, io.TeeReader(rc, h), nil)
}

// openManifest opens the manifest inside the local package at loc, as a
// stream, without reading the package's entries.
func openManifest(loc string) (io.ReadCloser, error) {
	zr, err := zip.OpenReader(loc)
	if err != nil && !errors.Is(err, zip.ErrInsecurePath) {
		return nil, err
	}
	for _, f := range zr.File {
		if f.Name != pkgread.ManifestName {
			continue
		}
		rc, err := f.Open()
		if err != nil {
			zr.Close()
			return nil, err
		}
		return &manifestReader{rc, zr}, nil
	}
	zr.Close()
	return nil, errors.New("no manifest")
}

// manifestReader closes the package with its manifest.
type manifestReader struct {
	io.ReadCloser
	zr *zip.ReadCloser
}

func (m *manifestReader) Close() error {
	m.ReadCloser.Close()
	return m.zr.Close()
}

// claim checks a target against the survey before it is written: a
// target another package carries with other content is refused.
func (p *pkgRun) claim(a *action) bool {
	cl := p.claimed
	if cl.clashes == nil || p.isChange() {
		return true
	}
	c := cl.clashes[entryRef{cl.pkg, a.b.N}]
	if cl.late != nil {
		c = cl.late.Late(pkgread.Target{Pkg: cl.pkg, N: a.b.N, Name: a.target, Length: a.b.Length, Want: a.b.Want})
	}
	switch c.Kind {
	case pkgread.ClashContent:
		p.refuse(a, finding.CheckClash, "not written: "+c.Message())
		return false
	case pkgread.ClashFold:
		p.rep.Report(finding.Finding{Severity: finding.Warning, Code: finding.CheckClash, Source: p.ref.Loc, URI: a.b.URL.Loc, Path: a.target, Msg: c.Message()})
	}
	return true
}
