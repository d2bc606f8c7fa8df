package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/rsdump/rsdump/finding"
	"github.com/rsdump/rsdump/follow"
	"github.com/rsdump/rsdump/pkgread"
	"github.com/rsdump/rsdump/replica"
	"github.com/rsdump/rsdump/resourcesync"
	"github.com/rsdump/rsdump/transfer"
	"github.com/rsdump/rsdump/trs"
	"github.com/rsdump/rsdump/unpack"
)

const syncHelp = `Usage: rsdump sync SOURCE --dest DIR [flags]
       rsdump sync --dest DIR [flags]

Makes DIR an exact, verified copy of a ResourceSync Source, and keeps it
current: run it again (from cron, say) to apply what changed. SOURCE is the
Source's base URL (its /.well-known/resourcesync Source Description is
read), a Source Description or Capability List URL, an HTML page with
<link rel="resourcesync">, any URL whose response has a Link header with
rel="resourcesync", a dump or list document itself, or a local pack
output directory (its capabilitylist.xml, else .well-known/resourcesync).
The well-known URI is tried for a base URL (a path empty or ending in
"/") and for a URL that answers with no ResourceSync document nor a link
to one; a URL naming a document that answers 404 is an error naming it.
A SOURCE that is no http(s) or s3:// URL and no plain path (htp://x,
file:///x, HOST:PORT/x) is a usage error. Without SOURCE, the one
DIR/.rsdump/state.json records is used, with the --s3-endpoint recorded.

SOURCE may also be an OSLC Tracked Resource Set (one that answers Turtle
or RDF/XML, as rsdump serve --trs's DUMPURL/trs does): the first run reads
every page of its Base and fetches the members, then applies the events
after the Base's cutoff event; later runs apply the Change Log's events
after the last one processed (recorded in DIR/.rsdump/state.json), and
rebase when the log no longer holds it (truncated, or rolled back),
removing what rsdump wrote that the Base no longer holds. Resources are
checked against the hashes of the ResourceSync documents the Tracked
Resource Set links with rel="resourcesync", when it links them. A walk
of the Change Log's trs:previous links that goes on past
--trs-max-segments segments, or of the Base's next links past
--trs-max-pages pages, or either past --trs-max-time, stops with an error
(a server's chain may never end, or never reach the sync point).

The first run takes a baseline: the Source's Resource Dump, every package
fetched by the engine behind rsdump get from all its mirrors with piece
checks, and unpacked as rsdump unpack does; or, when the Source has no
dump, its Resource List, resource by resource, each checked against its
length and hash, several at once. Later runs apply the Change Dump
packages after the until the state records, in order, or without a
Change Dump the Change List. When the Source's Resource Dump (else its
Resource List) is newer than what DIR holds and its changes do not reach
it (a Source that packs a full dump again each month), sync re-bases DIR:
DIR becomes exactly that snapshot, planned from its manifests and
DIR/.rsdump/written.log, fetching only the bitstreams that differ, from
inside the packages by byte ranges (a package most of which differs
whole), and removing the files rsdump wrote that it no longer holds. When
no change document covers the time since the last run, sync says so and
takes a new baseline the same way, unless it is older than what DIR holds:
that is refused, naming both times (--rollback takes it, DIR becoming
exactly that snapshot). A deleted change removes a file only when it is
one rsdump wrote there (or an identical file it adopted).

Every run first checks DIR against what rsdump wrote (DIR/.rsdump/
written.log: each file's length and mtime; with --audit every file's
hashes) and repairs what differs or is missing: only those bitstreams are
fetched, from inside their packages by byte ranges, from any mirror (of a
large stored bitstream with piece hashes, only the damaged pieces), or
from the resource's URI when no package carries that version. The summary
says "repaired N (M bytes fetched)". A damaged file whose version no
document carries any more is an error naming it.

rsdump changes only what it wrote: a first sync into a DIR with files at
the resources' names refuses before anything lands (--adopt, --overwrite:
see rsdump unpack --help); files the Source never had stay, and --audit
lists them as extras, apart from errors. --dry-run reads documents and
manifests only, never a package body, and plans the whole chain: its
counts are the run's.

Nothing unverified takes a final name. A run that is interrupted resumes:
a package applied whole is not fetched again, nor a file already in place,
and partial package downloads continue from DIR/.rsdump/cache. A re-base
or a rollback that stops part way is recorded in the state as unfinished:
the next sync says so and finishes it with the Source's current snapshot,
and a run that leaves DIR half-applied ends with an error, never with
none. A run that fails before it commits anything leaves DIR's state as
it was, and one that brings nothing into DIR records only that it ran: a
wrong guess of the base URL, or a wrong --base-url on an up-to-date
copy, is never recorded.

Nothing waits forever: every document and resource, and every package
mirror, is given up after --stall-timeout without a byte, or when it
delivers under --min-speed over 30s, naming its URL; a resource is cut
off at the length its list gives, or with none at --max-resource-size.

With --trust KEYFILE (an OpenPGP public key; repeatable), every document
is read only once its detached signature DOC.asc by one of the keys
verified, and every byte that lands matches a hash a signed document
gives: a missing, bad, expired or SHA-1 signature, or a resource whose
signed entry gives no hash, is refused, naming it, before anything lands.
The keys are pinned in DIR's state: every later run requires them, with or
without --trust, until --trust NEWKEY replaces them (the run says so).

A resource lands at its URI relative to --base-url; by default the base the
state records, else the one the Source's manifests imply.

With --follow, sync keeps running: after the first run it subscribes to
the notification channels the Source's Capability List advertises (else
the hub its Link header names), serving the hub's callback at
--callback-addr (--callback-url when the hub reaches it through a proxy),
each with its own secret, renewing the lease in time, and runs again each
time a notification signed with that secret comes; unsigned or forged
ones are ignored and reported. A change notification that does not start
where the copy is up to is reported as a gap (notifications were lost)
before the run that catches up. With no hub, or none reachable, and after
--poll without a notification, it runs anyway. One line per event (one
JSON object with --json); SIGINT or SIGTERM unsubscribes and exits 0.

Exit status: 0 the copy is exact, 1 problems found (a bitstream or
resource refused, a deletion refused, a package that failed, an audit
difference), 2 could not run (usage, no ResourceSync document found,
unreadable Source, unwritable DIR), 130 interrupted; run again to resume.

Examples:
  rsdump sync https://example.org/dataset1/capabilitylist.xml --dest ./copy --audit
  rsdump sync https://example.org/ --dest ./copy --follow --callback-addr 0.0.0.0:8091 \
      --callback-url https://dest.example.net/rsdump/ --poll 6h
  rsdump sync http://127.0.0.1:8080/data/trs --dest ./copy
`

type syncFlags struct {
	http1 bool // --http1.1: HTTP/1.1 only
	reportFlags
	follow                    bool
	callbackAddr, callbackURL string
	poll, lease               time.Duration
	dest, baseURL             string
	maxRatio                  float64
	jobs, fetches             int
	minSpeed, maxSize         int64
	audit, dryRun, verb       bool
	followOnly                []string // --follow's flags given, as "--poll"
	adopt, overwrite          bool
	rollback                  bool
	trs                       trs.Limits
}

// speedWindow is the window --min-speed is judged over; zero is the
// engine's (30s). Tests shorten it.
var speedWindow time.Duration

func runSync(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var f syncFlags
	fs := newFlags("sync")
	pathVarP(fs, &f.dest, "dest", "d", "", "keep the copy in `DIR` (required)")
	fs.StringVar(&f.baseURL, "base-url", "", "`URL` prefix that maps to DIR (default: recorded, else from the Source)")
	fs.BoolVar(&f.audit, "audit", false, "end with a check of DIR against the Source's Resource List (or Resource Dump)")
	fs.BoolVarP(&f.dryRun, "dry-run", "n", false, "say what would change; write nothing")
	fs.IntVarP(&f.jobs, "jobs", "j", 0, "packages unpacked at once (default: number of CPUs)")
	fs.IntVar(&f.fetches, "fetches", replica.DefaultFetches, "resources fetched at once from a Resource List or Change List (8 times as many over HTTP/2, as streams of one connection)")
	fs.Var(newSizeValue(&f.minSpeed, 1<<10), "min-speed", "fail a document or resource, and drop a package mirror, that delivers under `SIZE` bytes per second over 30s (0: never)")
	fs.Var(newSizeValue(&f.maxSize, unpack.DefaultMaxResourceSize), "max-resource-size", "refuse a list's resource whose entry gives no length past `SIZE` (one that gives a length is cut off at it)")
	fs.Float64Var(&f.maxRatio, "max-ratio", pkgread.DefaultMaxRatio, "refuse entries that inflate more than `N` times their compressed size")
	fs.BoolVarP(&f.verb, "verbose", "v", false, "print a line for every file written, found present or deleted")
	fs.BoolVar(&f.adopt, "adopt", false, "take files already in DIR that hold their bitstream as rsdump's (a first sync into a DIR that has files at the resources' names refuses without it)")
	fs.BoolVar(&f.overwrite, "overwrite", false, "replace files rsdump did not write (implies --adopt)")
	fs.BoolVar(&f.rollback, "rollback", false, "take a baseline older than DIR's state when the Source offers no other: DIR becomes exactly that snapshot")
	fs.IntVar(&f.trs.Segments, "trs-max-segments", trs.DefaultSegments, "stop a walk of a Tracked Resource Set's Change Log after `N` segments")
	fs.IntVar(&f.trs.Pages, "trs-max-pages", trs.DefaultPages, "stop a walk of a Tracked Resource Set's Base after `N` pages")
	fs.DurationVar(&f.trs.Time, "trs-max-time", trs.DefaultWalkTime, "stop a walk of a Tracked Resource Set's Change Log or Base after `DURATION`")
	fs.BoolVar(&f.follow, "follow", false, "keep running: subscribe to the Source's notification hub and sync when it notifies (or every --poll); stop with Ctrl-C")
	fs.StringVar(&f.callbackAddr, "callback-addr", follow.DefaultCallbackAddr, "with --follow: serve the hub's callback at `HOST:PORT`")
	fs.StringVar(&f.callbackURL, "callback-url", "", "with --follow: the `URL` the hub reaches the callback at, behind a proxy (default: http://HOST:PORT/ of --callback-addr)")
	fs.DurationVar(&f.poll, "poll", follow.DefaultPoll, "with --follow: sync anyway after `DURATION` without a notification")
	fs.DurationVar(&f.lease, "lease", 0, "with --follow: the subscription lease to ask the hub for (default: the hub's)")
	f.register(fs)
	parseReading := readerFlags(fs, &f.http1)
	ctx, err := parseReading(ctx, args, syncHelp, stdout, &f.baseURL)
	if err != nil {
		return err
	}
	for _, name := range []string{"callback-addr", "callback-url", "poll", "lease"} {
		if fs.Changed(name) {
			f.followOnly = append(f.followOnly, "--"+name)
		}
	}
	source, err := f.check(fs.Args())
	if err != nil {
		return err
	}
	return doSync(ctx, source, f, stdout, stderr)
}

// check checks the flags and parses SOURCE, if given; the zero Location
// is the Source DIR records.
func (f *syncFlags) check(args []string) (resourcesync.Location, error) {
	var none resourcesync.Location
	switch {
	case len(args) > 1:
		return none, usagef("sync takes one SOURCE, got %d", len(args))
	case f.dest == "":
		return none, usagef("sync needs --dest DIR")
	case f.maxRatio < 1:
		return none, usagef("--max-ratio must be at least 1")
	case f.jobs < 0 || f.fetches < 1:
		return none, usagef("--jobs must not be negative, --fetches must be positive")
	case f.stall <= 0:
		return none, usagef("--stall-timeout must be positive")
	case f.maxSize <= 0:
		return none, usagef("--max-resource-size must be positive")
	case f.follow && (f.dryRun || f.reportDir != ""):
		return none, usagef("--follow takes no --dry-run or --report-dir")
	case !f.follow && len(f.followOnly) > 0:
		return none, usagef("%s: only with --follow", strings.Join(f.followOnly, ", "))
	case f.poll <= 0:
		return none, usagef("--poll must be positive")
	case f.trs.Segments <= 0 || f.trs.Pages <= 0 || f.trs.Time <= 0:
		return none, usagef("--trs-max-segments, --trs-max-pages and --trs-max-time must be positive")
	}
	if f.callbackURL != "" && !resourcesync.IsURL(f.callbackURL) {
		return none, usagef("--callback-url %q: not an http(s) URL", f.callbackURL)
	}
	if err := checkSource("--base-url", f.baseURL); err != nil {
		return none, err
	}
	locs, err := parseLocations("SOURCE", args)
	if err != nil || len(locs) == 0 {
		return none, err
	}
	return locs[0], nil
}

func doSync(ctx context.Context, source resourcesync.Location, f syncFlags, stdout, stderr io.Writer) error {
	o := replica.Options{BaseURL: f.baseURL, DryRun: f.dryRun, Audit: f.audit, Jobs: f.jobs, Fetches: f.fetches, Adopt: f.adopt, Overwrite: f.overwrite, Rollback: f.rollback,
		MaxResourceSize: f.maxSize, Limits: pkgread.Limits{MaxRatio: f.maxRatio}, TRS: f.trs,
		Transfer: transfer.Options{StallTimeout: f.stall, MinSpeed: f.minSpeed, MinSpeedWindow: speedWindow, HTTP1: f.http1}}
	if f.minSpeed == 0 {
		o.Transfer.MinSpeed = -1 // off, as for get
	}
	if f.follow { // its own output: one line or JSON object per event
		return doFollow(ctx, source, f, o, stdout, stderr)
	}
	rep, p, err := startReport(f.reportFlags, stdout, stderr, "syncing")
	if err != nil {
		return err
	}
	o.Events = p.events(func(e finding.Event) {
		switch e := e.(type) {
		case finding.Note:
			if !f.quiet && !f.json {
				p.message("%s", escapeControl(e.Msg))
			}
		case finding.Finding:
			rep.restored(e, f.verb)
		}
	})
	res, err := replica.Sync(ctx, source, f.dest, o)
	p.done()
	if err != nil {
		return rep.fail(err)
	}
	c := res.Counts
	if res.Audit != nil {
		c.Errors += res.Audit.Errors
		c.Unverified += res.Audit.Unverified
	}
	return finishReport(rep, res, c, syncSummaryLine(res, f.dryRun))
}

func syncSummaryLine(r *replica.Result, dry bool) string {
	line := "up to date"
	if len(r.Steps) > 0 {
		line = r.Steps[0].Kind
		if len(r.Steps) > 1 {
			line += " and " + r.Steps[len(r.Steps)-1].Kind
		}
	}
	line += ": " + unpackSummaryLine(&unpack.Result{Packages: r.Packages, Written: r.Written, Present: r.Present, Deleted: r.Deleted,
		Refused: r.Refused, Bytes: r.Bytes, Counts: r.Counts}, dry)
	if rp := r.Repair; rp != nil && rp.Damaged > 0 {
		verb := "repaired"
		if dry {
			verb = "would repair"
		}
		line += fmt.Sprintf("; %s %d (%s fetched) of %s damaged or missing", verb, rp.Repaired, finding.Plural(rp.Fetched, "byte"), finding.Plural(rp.Damaged, "file"))
	}
	if a := r.Audit; a != nil {
		line += fmt.Sprintf("; audit: %s verified, %s", finding.Plural(a.Verified, "file"), finding.Plural(a.Errors, "error"))
		if a.Extras > 0 {
			line += fmt.Sprintf(", %s the Source never had (kept)", finding.Plural(a.Extras, "extra file"))
		}
	}
	return line
}
