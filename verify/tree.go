package verify

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sync/errgroup"

	"github.com/rsdump/rsdump/deststate"
	"github.com/rsdump/rsdump/finding"
	"github.com/rsdump/rsdump/internal/digest"
	"github.com/rsdump/rsdump/internal/httpc"
	"github.com/rsdump/rsdump/pkgread"
	"github.com/rsdump/rsdump/resourcesync"
)

// Audit compares the tree in dir with what the document at against
// describes, the Audit process of ResourceSync §5.2: a file missing, a
// file whose length or hash differs, and a file the document does not list
// are each an error. The document is a Resource Dump Manifest, a Resource
// Dump (through its detached manifests, or the manifests in its packages)
// or a Resource List, or an index of either. mapper says where each
// resource should be. The error is for a document or tree that cannot be
// read at all.
func Audit(ctx context.Context, dir, against string, mapper deststate.Mapper, opts Options) (*Summary, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	if opts.Jobs <= 0 {
		opts.Jobs = runtime.GOMAXPROCS(0)
	}
	a := &auditor{verifier: newVerifier(opts), dir: dir, root: root, mapper: mapper, seed: maphash.MakeSeed(), seen: map[uint64]struct{}{}}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(opts.Jobs)
	err = a.listing(gctx, against, func(src string, u resourcesync.URL) {
		g.Go(func() error { a.checkFile(src, u); return gctx.Err() })
	})
	if werr := g.Wait(); err == nil {
		err = werr
	}
	if err != nil && badDocument(ctx, err) {
		// Read and found malformed or too large: a finding, as in Verify.
		// The tree is not searched for extras against a partial listing.
		a.rep.Report(finding.Finding{Severity: finding.Error, Code: finding.CheckDocument, Source: against, Msg: strings.TrimPrefix(err.Error(), against+": ")})
		return a.summary(), nil
	}
	if err != nil {
		return nil, err
	}
	if err := a.extras(ctx); err != nil {
		return nil, err
	}
	sum := a.summary()
	sum.Extras = a.nExtras
	return sum, nil
}

type auditor struct {
	*verifier
	dir     string
	root    *os.Root
	mapper  deststate.Mapper
	seed    maphash.Seed
	mu      sync.Mutex
	seen    map[uint64]struct{} // hashes of the paths listed: 8 bytes a file, not the path
	nExtras int                 // extras walks alone
}

// errCannotAudit is a document of the wrong kind: the wrong argument,
// not a bad document.
var errCannotAudit = errors.New("cannot audit against")

// badDocument says whether err is about a document that was read and is
// not usable, rather than one that could not be read at all.
func badDocument(ctx context.Context, err error) bool {
	var oe *resourcesync.OpenError
	switch {
	case ctx.Err() != nil, errors.Is(err, errCannotAudit):
		return false
	case errors.As(err, &oe):
		return errors.Is(err, httpc.ErrTooLarge)
	}
	return true
}

// listing calls fn for every resource the document at loc describes: a
// Resource List (or its index), a Resource Dump Manifest, or a Resource
// Dump, whose packages' manifests are read.
func (a *auditor) listing(ctx context.Context, loc string, fn func(string, resourcesync.URL)) error {
	errDump := errors.New("a Resource Dump")
	ld := resourcesync.Loader{
		Open: resourcesync.Opener{Client: a.opts.Client}.Open,
		Document: func(d *resourcesync.Document) error {
			a.documents.Add(1)
			switch c := d.Header.MD.Capability; c {
			case resourcesync.CapResourceDump:
				return errDump
			case resourcesync.CapResourceList, resourcesync.CapResourceDumpManifest:
				return nil
			default:
				return fmt.Errorf("%s: %w a document of capability %q (want a Resource List, Resource Dump or Resource Dump Manifest)", d.Loc, errCannotAudit, c)
			}
		},
		Entry: func(d *resourcesync.Document, _ int, u resourcesync.URL) error {
			if d.Header.Kind == resourcesync.URLSet {
				fn(d.Loc, u)
			}
			return nil
		},
	}
	err := ld.Load(ctx, loc)
	if errors.Is(err, errDump) {
		return a.dumpListing(ctx, loc, fn)
	}
	return err
}

// dumpListing reads the manifest of every package of a Resource Dump, from
// its detached copy when linked (no package needs to be read) or else
// from the package.
func (a *auditor) dumpListing(ctx context.Context, loc string, fn func(string, resourcesync.URL)) error {
	d, err := pkgread.LoadDump(ctx, a.opts.Client, loc, finding.NewReporter(nil))
	if err != nil {
		return err
	}
	for _, ref := range d.Packages {
		m, err := a.manifestOf(ctx, ref)
		if err != nil {
			a.rep.Report(finding.Finding{Severity: finding.Error, Code: finding.CheckManifest, Source: ref.Loc, URI: ref.Entry.Loc, Msg: err.Error()})
			continue
		}
		dec, err := resourcesync.NewDecoder(bytes.NewReader(m))
		if err == nil {
			err = dec.Each(func(u resourcesync.URL) error { fn(ref.Loc, u); return nil })
		}
		if err != nil {
			return fmt.Errorf("%s: manifest: %w", ref.Loc, err)
		}
	}
	return nil
}

func (a *auditor) manifestOf(ctx context.Context, ref pkgread.PackageRef) ([]byte, error) {
	if ref.Contents != "" {
		if m, err := fetchLinked(ctx, a.opts.Client, a.opener, ref, ref.Contents); err == nil {
			return m, nil
		}
	}
	ra, size, closeFn, err := a.openPackage(ctx, ref)
	if err != nil {
		return nil, err
	}
	defer closeFn()
	p, err := pkgread.OpenPackage(ra, size, ref.Loc, "", a.opts.Limits, finding.NewReporter(nil))
	if err != nil {
		return nil, err
	}
	return p.Manifest, nil
}

func (a *auditor) markSeen(rel string) {
	h := maphash.String(a.seed, rel)
	a.mu.Lock()
	a.seen[h] = struct{}{}
	a.mu.Unlock()
}

func (a *auditor) wasSeen(rel string) bool {
	h := maphash.String(a.seed, rel)
	a.mu.Lock()
	defer a.mu.Unlock()
	_, ok := a.seen[h]
	return ok
}

// checkFile compares one file with the entry describing it.
func (a *auditor) checkFile(src string, u resourcesync.URL) {
	base := finding.Finding{Source: src, URI: u.Loc}
	rel, err := a.mapper.Target(u)
	if err != nil {
		a.report(base, finding.Error, finding.CheckPath, "", "", err.Error())
		return
	}
	a.markSeen(rel)
	base.Path = rel
	want, length := expectation(u)
	n, sums, err := hashFile(a.root, rel, want.Known(), length)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		a.report(base, finding.Error, finding.CheckMissing, pkgread.Describe(length, want), "", "file is missing")
	case err != nil:
		a.report(base, finding.Error, finding.CheckRead, "", "", err.Error())
	default:
		a.judge(base, length, want, n, sums)
	}
}

func (a *auditor) report(base finding.Finding, sev finding.Severity, check, expected, actual, msg string) {
	base.Severity, base.Code, base.Expected, base.Actual, base.Msg = sev, check, expected, actual, msg
	a.rep.Report(base)
}

func expectation(u resourcesync.URL) (digest.Set, int64) {
	if u.MD == nil {
		return nil, -1
	}
	want, _ := digest.Parse(u.MD.Hash) // a bad attribute leaves nothing to verify: unverified
	length := int64(-1)
	if u.MD.Length != nil {
		length = *u.MD.Length
	}
	return want, length
}

// judge compares a file's length and digests with the entry.
func (a *auditor) judge(base finding.Finding, length int64, want digest.Set, n int64, sums digest.Set) {
	a.bitstreams.Add(1)
	a.bytes.Add(n)
	if length >= 0 && n != length {
		a.report(base, finding.Error, finding.CheckLength, strconv.FormatInt(length, 10), strconv.FormatInt(n, 10), "length differs")
		return
	}
	ok, bad, unchecked := digest.Check(want, sums)
	for _, m := range bad {
		a.report(base, finding.Error, finding.CheckHash, m.Alg+":"+m.Want, m.Alg+":"+m.Got, m.Alg+" mismatch")
	}
	if len(bad) > 0 {
		return
	}
	if sev, check, msg := pkgread.Coverage(len(want), length, len(ok), unchecked); sev != finding.OK {
		a.report(base, sev, check, "", "", msg)
		if sev != finding.Warning {
			return
		}
	}
	a.verified.Add(1)
	a.report(base, finding.OK, finding.CheckBitstream, pkgread.Describe(length, want), pkgread.Describe(n, sums), "")
}

// hashFile reads a file of the tree once, through os.Root so that a
// symbolic link cannot lead the audit out of the tree. A file longer than
// the expected length is not read past it.
func hashFile(root *os.Root, rel string, algs []string, length int64) (int64, digest.Set, error) {
	fi, err := root.Lstat(filepath.FromSlash(rel))
	if err != nil {
		return 0, nil, err
	}
	if !fi.Mode().IsRegular() {
		return 0, nil, fmt.Errorf("%s is not a regular file (%s)", rel, fi.Mode().Type())
	}
	if length >= 0 && fi.Size() != length {
		return fi.Size(), nil, nil
	}
	f, err := root.Open(filepath.FromSlash(rel))
	if err != nil {
		return 0, nil, err
	}
	defer f.Close()
	mh, err := digest.NewMulti(algs...)
	if err != nil {
		return 0, nil, err
	}
	if _, err := io.CopyBuffer(mh, f, make([]byte, 256<<10)); err != nil {
		return 0, nil, fmt.Errorf("%s: %w", rel, err)
	}
	return mh.Len(), mh.Sums(), nil
}

// extra reports a file no entry listed.
func (a *auditor) extra(rel string) {
	a.nExtras++
	f := finding.Finding{Severity: finding.Error, Code: finding.CheckExtra, Source: a.dir, Path: rel, Msg: "file is not listed"}
	if a.opts.AllowExtras {
		f.Severity, f.Msg = finding.Warning, "file is not listed: the Source never had it; left as it is"
	}
	a.rep.Report(f)
}

// extras walks the tree for files no entry listed. rsdump's state
// directory is not part of the tree.
func (a *auditor) extras(ctx context.Context) error {
	return deststate.WalkTree(ctx, a.dir, func(rel string, _ fs.DirEntry, err error) error {
		if err == nil && !a.wasSeen(rel) {
			a.extra(rel)
		}
		return err
	})
}
