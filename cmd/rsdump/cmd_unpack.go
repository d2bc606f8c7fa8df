package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/rsdump/rsdump/deststate"
	"github.com/rsdump/rsdump/finding"
	"github.com/rsdump/rsdump/pkgread"
	"github.com/rsdump/rsdump/transfer"
	"github.com/rsdump/rsdump/unpack"
)

const unpackHelp = `Usage: rsdump unpack SOURCE... --dest DIR --base-url URL [flags]
       rsdump unpack SOURCE... --dest DIR --layout path [flags]
       rsdump unpack DUMP --dest DIR --shard K/N|auto [flags]   (N workers into one shared DIR)
       rsdump unpack DUMP --dest DIR --merge [flags]            (once every worker has ended)

Restores a Resource Dump or Change Dump into DIR. Each SOURCE, applied in
turn, is a package (.zip), a dump document or index (a file or an http(s)
URL), or a directory holding a copy of a dump, as rsdump get leaves one
(its Resource Dumps are applied first, then its Change Dumps; packages no
document lists are not applied). A remote package is fetched by the
engine behind rsdump get, from its <loc>, every rel="duplicate" mirror
and its Metalink, into DIR/.rsdump/cache, and checked against the
document's length and hash before use. For a local dump document, each
package is looked for beside it under the last segment of its URL.

A bitstream lands at its URI relative to --base-url (the prefix the Source
used, like resync's --map URL=DIR), or with --layout path at the manifest's
path. A URI outside the base, or a name that would leave DIR (.., an
absolute path, a symbolic link in DIR pointing elsewhere), is refused for
that bitstream.

Each bitstream streams into a staging file inside DIR while its CRC-32,
length and hashes are computed; only when all match is it synced and
renamed over its final name, with its mtime set from <lastmod> and the
permission bits (rwx only) the package records. A bitstream
that fails leaves the file at that name untouched. A bitstream whose
manifest gives no hash rsdump can compute is written (its length and CRC-32
matched) but reported as unverified. Files already present with the right
length and hashes are not rewritten. With --atomic-package, nothing from a
package is committed unless the whole package verified.

rsdump changes only what it wrote. A first unpack into a DIR that holds a
file at a bitstream's name (and no rsdump state) refuses before anything
lands, naming that file; --adopt takes the files that already hold their
bitstream as rsdump's (recorded as written) and refuses the others,
--overwrite replaces those too. Later, a file rsdump did not write is
neither replaced nor deleted (a conflict, reported); files the Source never
had stay. DIR/.rsdump/written.log records every file rsdump wrote or
adopted, with its length, hashes and mtime.

--only GLOB restores just the files whose path in DIR, or a directory
above it, matches GLOB (repeatable): each is read from inside its package
by byte ranges, from any mirror (the package's central directory, then the
bitstream, checked against the manifest's hashes), so a few files of a
remote dump cost a few files' bytes. The state does not change.

Change Dumps are applied in manifest order, package after package, in the
order of changedump.xml; a deleted change removes a file only when it is
one rsdump wrote there (or an identical file it adopted) and is still as
rsdump wrote it. A changed file gets the <lastmod> of its change, a
directory that became a file (or the reverse) changes in one run.
DIR/.rsdump/state.json records the Resource
Dump's at and then the last until applied: packages up to it are skipped,
so running again changes nothing, and a later Change Dump continues from
there. A package must start (from) at or before that time: a later start
is a gap, and an error naming both times, as is a Change Dump applied to a
DIR with no state (no baseline: unpack the Resource Dump first).
--allow-gap applies it anyway, with a warning: the changes in the gap are
then missing from DIR. Packages of one Change Dump that are out of order
or overlap are an error naming them, and none is applied. Given a
directory holding both a Resource Dump and a Change Dump (a pack output
directory), unpack applies the Resource Dump, unless DIR already holds it
or a later state, then the changes after it.

The tree never moves back in time: a Resource Dump (or one of its
packages) older than DIR's state is refused, naming both times; --rollback
applies it, DIR becoming exactly that snapshot (files rsdump wrote since
are removed) and the state recording the rollback. A package whose
manifest's at, from or until is not what its dump document says is
refused, as is a document with a time later than now plus 5 minutes.
--dry-run reads manifests only (detached copies, else a package's central
directory and manifest entry by ranges), never a package's bitstreams.

With --shard K/N (or auto: K and N from Slurm's, a Kubernetes Indexed
Job's or AWS Batch's environment, N from --shards or RSDUMP_SHARDS where
the scheduler does not export it), N workers on as many machines restore
one Resource Dump into one DIR they share: the first to start checks DIR
as one process would and finds the targets two packages carry with
different content; then each claims whole packages one at a time (in
DIR/.rsdump/shards) and restores them, writing its own written log. A
worker that dies leaves its claim, which a rerun of any worker takes over
once the lease (--lease, default 5m) has passed. --merge then checks that
every package was restored (naming those that were not, and why), moves
the workers' logs into DIR's and records the state: DIR is an ordinary
Destination, to which sync or unpack apply the Source's Change Dumps.

Exit status: 0 everything applied, 1 problems found (a bitstream refused,
a deletion refused, a package that failed, a malformed or oversized
document), 2 could not run (usage,
unreadable source, unwritable DIR), 130 interrupted; run again to resume.

Examples:
  rsdump unpack ./dump/resourcedump.xml --dest ./tree --base-url https://example.org/data/
  rsdump unpack https://example.org/dump/changedump.xml --dest ./tree --base-url https://example.org/data/ --dry-run
  rsdump unpack https://example.org/dump/resourcedump.xml --dest ./tree --base-url https://example.org/data/ --only 'reports/2025/*'
`

type unpackFlags struct {
	http1 bool // --http1.1: HTTP/1.1 only
	reportFlags
	dest, baseURL, layout string
	maxRatio              float64
	jobs                  int
	atomic, dryRun, verb  bool
	allowGap              bool
	adopt, overwrite      bool
	rollback              bool
	only                  []string
	sh                    shardFlags
	merge                 bool
	task                  *task
}

func runUnpack(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var f unpackFlags
	fs := newFlags("unpack")
	pathVarP(fs, &f.dest, "dest", "d", "", "restore into `DIR` (required)")
	fs.StringVar(&f.baseURL, "base-url", "", "`URL` prefix the Source used; a bitstream lands at its URI relative to it")
	fs.StringVar(&f.layout, "layout", "url", "place bitstreams by `url` (relative to --base-url) or by manifest path")
	fs.BoolVar(&f.atomic, "atomic-package", false, "commit nothing from a package unless every bitstream in it verified")
	fs.BoolVar(&f.allowGap, "allow-gap", false, "apply Change Dump packages that do not continue from DIR's state (or with no baseline), with a warning")
	fs.BoolVar(&f.adopt, "adopt", false, "take files already in DIR that hold their bitstream as rsdump's (a first run into a DIR that has files at the bitstreams' names refuses without it)")
	fs.BoolVar(&f.overwrite, "overwrite", false, "replace files rsdump did not write (implies --adopt)")
	fs.StringArrayVar(&f.only, "only", nil, "restore only the files whose path in DIR, or a directory above it, matches `GLOB` (path.Match; repeatable), each read from inside its package: no whole package is downloaded")
	fs.BoolVar(&f.rollback, "rollback", false, "apply a snapshot older than DIR's state: DIR becomes exactly that snapshot, later files rsdump wrote removed")
	fs.BoolVarP(&f.dryRun, "dry-run", "n", false, "read the manifests and DIR and report what would change; write nothing")
	fs.Float64Var(&f.maxRatio, "max-ratio", pkgread.DefaultMaxRatio, "refuse entries that inflate more than `N` times their compressed size")
	fs.IntVarP(&f.jobs, "jobs", "j", 0, "Resource Dump packages unpacked at once (default: number of CPUs)")
	fs.BoolVarP(&f.verb, "verbose", "v", false, "print a line for every file written, found present or deleted")
	f.sh.register(fs, "restoring the packages of DUMP it claims in DIR, shared with the other workers; then --merge")
	fs.BoolVar(&f.merge, "merge", false, "end a sharded restore of DUMP into DIR: check every package was restored, record DIR's state")
	f.register(fs)
	parseReading := readerFlags(fs, &f.http1)
	ctx, err := parseReading(ctx, args, unpackHelp, stdout, &f.baseURL)
	if err != nil {
		return err
	}
	opts, err := f.options(fs.Args())
	if err != nil {
		return err
	}
	locs, err := parseLocations("SOURCE", fs.Args())
	if err != nil {
		return err
	}
	return doUnpack(ctx, locStrings(locs), f, opts, stdout, stderr)
}

func (f *unpackFlags) options(args []string) (unpack.Options, error) {
	var o unpack.Options
	switch {
	case len(args) == 0:
		return o, usagef("unpack needs a SOURCE")
	case f.dest == "":
		return o, usagef("unpack needs --dest DIR")
	case f.maxRatio < 1:
		return o, usagef("--max-ratio must be at least 1")
	case f.jobs < 0:
		return o, usagef("--jobs must not be negative")
	case f.stall <= 0:
		return o, usagef("--stall-timeout must be positive")
	}
	if err := checkSource("--base-url", f.baseURL); err != nil {
		return o, err
	}
	if err := unpack.CheckOnlyPatterns(f.only); err != nil {
		return o, usageError{err}
	}
	layout, err := deststate.ParseLayout(f.layout)
	if err != nil {
		return o, usageError{err}
	}
	if layout == deststate.ByURI && f.baseURL == "" {
		return o, usagef("unpack needs --base-url URL (the prefix of the bitstream URIs), or --layout path")
	}
	m, err := deststate.NewMapper(layout, f.baseURL)
	if err != nil {
		return o, usageError{err}
	}
	if err := f.shardOptions(&o, args); err != nil {
		return o, err
	}
	return unpack.Options{Shard: o.Shard, Mapper: m, AtomicPackage: f.atomic, DryRun: f.dryRun, AllowGap: f.allowGap, Adopt: f.adopt, Overwrite: f.overwrite, Rollback: f.rollback, Only: f.only,
		Limits: pkgread.Limits{MaxRatio: f.maxRatio}, Jobs: f.jobs, Transfer: transfer.Options{StallTimeout: f.stall, HTTP1: f.http1}}, nil
}

// shardOptions are a sharded restore's worker's, or its merge's.
func (f *unpackFlags) shardOptions(o *unpack.Options, args []string) error {
	t, ok, err := f.sh.task()
	switch {
	case err != nil:
		return err
	case !ok && !f.merge:
		if f.sh.lease != 0 {
			return usagef("--lease goes with --shard")
		}
		return nil
	case ok && f.merge:
		return usagef("--merge ends a sharded restore: give it without --shard")
	case len(args) != 1:
		return usagef("a sharded restore, and its --merge, take one DUMP (its resourcedump.xml)")
	case f.dryRun || f.rollback || len(f.only) > 0:
		return usagef("a sharded restore is not a --dry-run, --rollback or --only: run those in one process")
	case f.merge:
		return nil
	}
	f.task = &t
	o.Shard = &unpack.ShardOptions{K: t.K, N: t.N, Worker: t.String(), Lease: f.sh.lease}
	return nil
}

// unpackSummary is --json's summary: the result, and a worker's place.
type unpackSummary struct {
	*unpack.Result
	Scheduler string `json:"scheduler,omitempty"`
	Shard     int    `json:"shard,omitempty"`
	Shards    int    `json:"shards,omitempty"`
}

func doUnpack(ctx context.Context, sources []string, f unpackFlags, o unpack.Options, stdout, stderr io.Writer) error {
	rep, p, err := startReport(f.reportFlags, stdout, stderr, "unpacking")
	if err != nil {
		return err
	}
	o.Events = p.events(func(e finding.Event) {
		if c, ok := e.(unpack.PackageClaimed); ok && !f.quiet && !f.json {
			p.message("rsdump: %s claimed%s", escapeControl(c.Package), takenOver(c.From))
		}
		if fd, ok := e.(finding.Finding); ok {
			rep.restored(fd, f.verb)
		}
	})
	if f.task != nil && !f.quiet && !f.json {
		p.message("rsdump: %s: claiming the packages of %s, restored into %s", f.task.describe(), sources[0], f.dest)
	}
	var res *unpack.Result
	switch {
	case f.merge:
		res, err = unpack.MergeShards(ctx, sources[0], f.dest, o)
	case o.Shard != nil:
		res, err = unpack.Work(ctx, sources[0], f.dest, o)
	default:
		res, err = unpack.UnpackAll(ctx, sources, f.dest, o)
	}
	p.done()
	if err != nil {
		if errors.Is(err, unpack.ErrBaseURL) {
			err = fmt.Errorf("%w (give it as --base-url, or use --layout path)", err)
		}
		return rep.fail(err)
	}
	sum := unpackSummary{Result: res}
	if f.task != nil {
		sum.Scheduler, sum.Shard, sum.Shards = cmp.Or(f.task.Scheduler, "none"), f.task.K, f.task.N
	}
	return finishReport(rep, sum, res.Counts, unpackSummaryLine(res, f.dryRun)+shardsLine(res))
}

// shardsLine is what a worker of a sharded restore did and left, or
// what its merge did.
func shardsLine(r *unpack.Result) string {
	if r.Merged > 0 {
		return fmt.Sprintf("\nmerged: the written logs' %s moved into the tree's; the state records the dump", finding.Plural(r.Merged, "record"))
	}
	s := r.Shards
	if s == nil {
		return ""
	}
	line := fmt.Sprintf("\npackages restored here: %d; %d of %d restored", len(s.Restored), s.Done, s.Packages)
	if s.Done == s.Packages {
		line += ": run unpack --merge"
	}
	for _, h := range s.Held {
		line += "\nheld by another worker: " + h
	}
	for _, l := range s.Left {
		line += "\nleft (a rerun of any worker takes it): " + l
	}
	return line
}

func unpackSummaryLine(r *unpack.Result, dry bool) string {
	verb := "written"
	if dry {
		verb = "to write (dry run)"
	}
	return fmt.Sprintf("%s: %s %s (%s), %d already present, %d deleted, %d refused; %s, %d unverified, %s",
		finding.Plural(r.Packages, "package"), finding.Plural(r.Written, "file"), verb, fmtBytes(r.Bytes), r.Present, r.Deleted, r.Refused,
		finding.Plural(r.Errors, "error"), r.Unverified, finding.Plural(r.Warnings, "warning"))
}

func orText(s, alt string) string {
	if s == "" {
		return alt
	}
	return s
}
