// Package verify checks ResourceSync Resource Dumps and Change Dumps and
// the trees restored from them, and writes nothing. It reports every
// problem it finds as a finding.Finding, rather than stopping at the first,
// and an OK Finding for each bitstream and package that verified, so that
// a caller can keep the ok and notOK logs of the D-Lib transfer process.
//
// Packages are read by pkgread, in one pass, front to back (its
// PassHasher computes the package's own hash over the same reads), remote
// ones once transfer/pkgfetch fetched them; verify adds what only a check
// of a whole dump needs: the package against its dump document, the
// detached manifest, the clashes between packages. Packages are verified
// in parallel.
package verify

import (
	"context"
	"errors"
	"net/http"
	"runtime"
	"sync/atomic"

	"golang.org/x/sync/errgroup"

	"github.com/rsdump/rsdump/finding"
	"github.com/rsdump/rsdump/internal/httpc"
	"github.com/rsdump/rsdump/pkgread"
)

// Options configure Verify.
type Options struct {
	pkgread.Limits
	Jobs   int          // packages verified at once; default GOMAXPROCS
	Client *http.Client // for documents read from URLs; default httpc.Default()
	// Packages opens the packages the dumps name; default pkgread.Local,
	// which reads local packages only. A caller that verifies remote
	// dumps gives one that fetches (transfer/pkgfetch.Remote): verify
	// itself holds no download code.
	Packages pkgread.Opener
	// TempDir holds the run's scratch (the tables of targets); default
	// os.TempDir().
	TempDir string
	// AllowExtras makes a file of the tree that the listing lacks a
	// warning in Audit, not an error: a Destination may hold files of its
	// own, which rsdump never touches. Either way Summary.Extras counts
	// them.
	AllowExtras bool

	// Events receives every finding (a finding.Finding, OK ones included,
	// one call at a time) and the progress of the run in package bytes:
	// finding.Planned, the bytes added to the work ahead (the packages'
	// lengths, known from the dump documents and the file system before
	// any package is read, later the size of a package that only opening
	// it tells), and finding.Progress, the bytes read, which add up to
	// Planned's when the run is complete. Progress comes from several
	// goroutines at once: Events must be safe for concurrent use.
	Events func(finding.Event)
}

// Summary sums up a run.
type Summary struct {
	Documents  int   `json:"documents"`
	Packages   int   `json:"packages"`
	Bitstreams int   `json:"bitstreams"`
	Verified   int   `json:"verified"` // bitstreams whose length and hashes matched
	Bytes      int64 `json:"bytes"`
	Extras     int   `json:"extras,omitempty"` // files of an audited tree that the listing lacks
	finding.Counts
}

type verifier struct {
	opts       Options
	opener     pkgread.Opener // opens packages (Options.Packages)
	rep        *finding.Reporter
	documents  atomic.Int64
	packages   atomic.Int64
	bitstreams atomic.Int64
	verified   atomic.Int64
	bytes      atomic.Int64
}

// Verify checks each target: a package (.zip), a dump document or index
// (resourcedump.xml, changedump.xml; a file or an http(s) URL), or a
// directory holding them. It returns an error only when a target cannot be
// read at all, or, under a trust (resourcesync.WithTrust), is a package
// given alone, which no signed document vouches for; everything found
// inside is a Finding, and the Summary's Problems count says whether all
// verified.
func Verify(ctx context.Context, targets []string, opts Options) (*Summary, error) {
	v := newVerifier(opts)
	var jobs []job
	var all []pkgread.PackageRef
	var tables []*pkgread.Claims
	for _, t := range targets {
		refs, err := v.expand(ctx, t)
		if err != nil {
			return nil, err
		}
		claims := pkgread.NewClaims(opts.TempDir) // one per target: the packages of one dump
		defer claims.Close()
		tables = append(tables, claims)
		for _, ref := range refs {
			jobs = append(jobs, job{ref: ref, claims: claims, pkg: claims.AddPackage(ref.Loc)})
		}
		all = append(all, refs...)
	}
	pkgread.Announce(all, v.opts.Events)
	if err := v.run(ctx, jobs); err != nil {
		return nil, err
	}
	for _, c := range tables {
		if err := v.reportClashes(c); err != nil {
			return nil, err
		}
	}
	return v.summary(), nil
}

func newVerifier(opts Options) *verifier {
	if opts.Jobs <= 0 {
		opts.Jobs = runtime.GOMAXPROCS(0)
	}
	if opts.Client == nil {
		opts.Client = httpc.Default()
	}
	if opts.Packages == nil {
		opts.Packages = pkgread.Local{}
	}
	return &verifier{opts: opts, rep: finding.NewReporter(opts.Events), opener: opts.Packages}
}

// job is one package to check, with the table of the targets its dump's
// packages carry.
type job struct {
	ref    pkgread.PackageRef
	claims *pkgread.Claims
	pkg    int // its number in claims
}

func (v *verifier) run(ctx context.Context, jobs []job) error {
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(v.opts.Jobs)
	for _, j := range jobs {
		g.Go(func() error { return v.checkPackage(ctx, j) })
	}
	return g.Wait()
}

func (v *verifier) summary() *Summary {
	return &Summary{
		Documents: int(v.documents.Load()), Packages: int(v.packages.Load()),
		Bitstreams: int(v.bitstreams.Load()), Verified: int(v.verified.Load()), Bytes: v.bytes.Load(), Counts: v.rep.Counts(),
	}
}

// loadDump loads a document, counting a rejected one as a finding rather
// than a failure to run.
func (v *verifier) loadDump(ctx context.Context, loc string) ([]pkgread.PackageRef, error) {
	d, err := pkgread.LoadDump(ctx, v.opts.Client, loc, v.rep)
	if errors.Is(err, pkgread.ErrRejected) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	v.documents.Add(1)
	return d.Packages, nil
}
