package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/rsdump/rsdump/finding"
	"github.com/rsdump/rsdump/layout"
	"github.com/rsdump/rsdump/notify"
	"github.com/rsdump/rsdump/pack"
	"github.com/rsdump/rsdump/resourcesync"
)

const packHelp = `Usage: rsdump pack SRC --base-url URL -o OUTDIR [flags]
       rsdump pack --changes [--since BASELINE] [--checksum] SRC --base-url URL -o OUTDIR [flags]
       rsdump pack --shard auto|K/N SRC --base-url URL -o OUT [flags]   (N machines, K = 1..N)
       rsdump pack --merge --base-url URL -o OUT [flags]           (once every shard completed)

Writes a ResourceSync Resource Dump of every regular file under SRC:
OUTDIR/resourcedump-00001.zip, ... each with manifest.xml at its top level
and the bitstreams under resources/; a detached copy of each manifest
(resourcedump-00001.manifest.xml); OUTDIR/resourcedump.xml; the Resource
List resourcelist.xml (every bitstream with its hashes, from the same read);
and capabilitylist.xml naming the capability documents in OUTDIR, last.

A file's <loc> is the base URL plus its path relative to SRC. Packages are
written under temporary names and renamed when complete; running the same
command again after an interruption reuses the packages already finished.
Files of an earlier, larger run that the new resourcedump.xml no longer
names (resourcedump-NNNNN.zip, .manifest.xml, .zip.meta4, index parts) are
reported, and removed with --prune once resourcedump.xml is written.

Every run leaves OUTDIR/.rsdump-pack.state, last: the files the
Destination has once it applied what OUTDIR holds, with their lengths,
mtimes and hashes.

With --changes, pack writes a Change Dump of what changed since BASELINE
(default: OUTDIR/.rsdump-pack.state): a resourcedump.xml, a changedump.xml
(with the resourcedump.xml its changes start from beside it), a
resourcelist.xml or a state file. Files are compared by length and mtime;
one whose length and mtime match is not read (--checksum compares hashes
instead, reading every file). changedump-NNNNN.zip packages hold the
created and updated files under changes/ and the deletions, in
chronological order. Each run lists its packages in its own Change Dump
and Change List (changedump-partNNNNN.xml, changelist-partNNNNN.xml),
from where the last run ended, and adds them to OUTDIR/changedump.xml and
OUTDIR/changelist.xml, the indexes of every run's; it reads no earlier
run's manifests or lists. A run that finds no change writes nothing and
exits 0.

OUTDIR may be s3://BUCKET/PREFIX (credentials and region from the AWS
environment and config files, --s3-endpoint for other servers): each
package is streamed into a multipart upload with a SHA-256 per part, and
appears only once complete; a rerun resumes the uploads the journal
records.

With --shard auto, N processes (the tasks of a Slurm array, a Kubernetes
Indexed Job or an AWS Batch array job, K and N read from the scheduler's
environment; --shards N or RSDUMP_SHARDS where it does not export N)
share SRC cut into --parts M parts (default 4 per worker) by path: the
first plans the parts in OUT, then each claims the next unclaimed part,
packs it, and claims again until none is left. A worker that dies leaves
its claim, which a rerun of any worker takes over once the lease
(--lease, default 5m) has passed. --shard K/N without --parts packs the
fixed K-th of N parts, each file's part given by a hash of its path.
Either way --merge with the same flags then writes the one dump
document, lists and state, refusing while a part is not done (naming it
and its holder) or two overlap.

With --hub URL, the Capability List advertises the Source's notification
channels at that WebSub hub (topics HUB/framework and, with
--change-notification, HUB/changes; or under --topic PREFIX), and after
the run pack posts to the hub a framework notification naming every
document it created or changed and, with --change-notification, the
run's changes (ResourceSync Framework and Change Notification). A
notification the hub does not take is retried, then reported as a
warning: it never changes the exit status. rsdump serve --hub is such a
hub; sync --follow listens to it.

With --sign KEYFILE (an OpenPGP secret key, armored or binary; its
passphrase from --sign-passphrase-file or RSDUMP_SIGN_PASSPHRASE), every
document pack writes gets an armored detached signature NAME.asc beside
it (the Capability List, .well-known/resourcesync, the lists, dump
documents, indexes and detached manifests), and every package a
<signature> in its .meta4; --sign-valid DURATION makes them expire. A
Destination with --trust then takes nothing unsigned by that key.

Exit status: 0 success, 1 failure (a file could not be read, changed while
read, or an output could not be written), 2 usage error, 130 interrupted.

Examples:
  rsdump pack ./collection --base-url https://example.org/data/ -o ./dump
  rsdump pack ./collection --base-url https://example.org/data/ -o ./dump \
      --metalink --mirror https://mirror.example.net/dump/ --sign source.sec.asc --sign-valid 168h --json
  rsdump pack ./collection --base-url https://example.org/data/ -o s3://dumps/rs \
      --s3-endpoint https://rgw.example.org --shard 2/3
`

type packFlags struct {
	out, baseURL, dumpURL, capList, hashes, compress, at string
	maxSize                                              int64
	level, jobs                                          int
	skipChanged, follow, quiet, json, prune              bool
	changes, checksum                                    bool
	since                                                string
	metalink                                             bool
	mirrors                                              []string
	pieceLength                                          int64
	sourceDesc                                           bool
	describedBy                                          string
	sh                                                   shardFlags
	parts                                                int
	task                                                 *task // the worker --shard names
	merge                                                bool
	hub, topic                                           string
	changeNotification                                   bool
	sign                                                 signerFlags
}

func runPack(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var f packFlags
	fs := newFlags("pack")
	pathVarP(fs, &f.out, "output", "o", "", "write the dump into `DIR` or s3://BUCKET/PREFIX (required)")
	fs.StringVar(&f.baseURL, "base-url", "", "`URL` prefix of every bitstream's <loc> (required)")
	fs.StringVar(&f.dumpURL, "dump-url", "", "`URL` prefix of the packages (default: the first --mirror, else the base URL)")
	fs.StringVar(&f.capList, "capability-list", "", "`URL` of the Capability List, linked as rel=\"up\" (default: the capabilitylist.xml written in OUTDIR, at the dump URL)")
	fs.BoolVar(&f.sourceDesc, "source-description", false, "also write OUTDIR/.well-known/resourcesync, the Source Description naming the Capability List (for OUTDIR served at its host's root)")
	fs.StringVar(&f.describedBy, "describedby", "", "`URL` of a document about the Source, linked as rel=\"describedby\" from the Capability List and Source Description")
	fs.StringVar(&f.hashes, "hash", "sha-256", "manifest hash `ALGS`, comma-separated: md5, sha-1, sha-224, sha-256, sha-384, sha-512, blake3")
	fs.StringVar(&f.compress, "compress", "auto", "`MODE`: auto (store compressed media and data that does not shrink), store or deflate")
	fs.IntVar(&f.level, "level", 6, "deflate `LEVEL`, 1 (fast) to 9 (small)")
	fs.Var(newSizeValue(&f.maxSize, pack.DefaultMaxPackageSize), "max-package-size", "split packages at `SIZE` (bytes, or 64M, 1GiB; a larger file gets a package of its own)")
	fs.StringVar(&f.at, "at", "", "snapshot `TIME` (W3C datetime) for every at/completed attribute; same input and --at give identical packages")
	fs.BoolVar(&f.changes, "changes", false, "write a Change Dump of what changed since the baseline, instead of a Resource Dump")
	pathVarP(fs, &f.since, "since", "", "", "with --changes: the baseline `FILE`, what the Destination has (default OUTDIR/.rsdump-pack.state)")
	fs.BoolVar(&f.checksum, "checksum", false, "with --changes: compare every file's hash with the baseline's, not its length and mtime")
	fs.BoolVar(&f.skipChanged, "skip-changed", false, "leave out files that change while read, with a warning, instead of failing")
	fs.BoolVar(&f.prune, "prune", false, "remove the packages, manifests, Metalinks and index parts of an earlier run that the new dump no longer names")
	fs.BoolVar(&f.follow, "follow-symlinks", false, "pack the targets of symbolic links instead of skipping them")
	fs.BoolVar(&f.metalink, "metalink", false, "write NAME.zip.meta4 (Metalink 4: size, sha-256, piece hashes, mirrors) beside each package")
	fs.StringArrayVar(&f.mirrors, "mirror", nil, "`URL[,priority=N][,location=CC]` of a mirror holding the packages (repeatable; needs --metalink); without --dump-url the first is the packages' <loc>")
	fs.Var(newSizeValue(&f.pieceLength, 0), "piece-length", "Metalink piece `SIZE` (bytes, or 1M, 4MiB; default: from the package size limit, 256 KiB to 16 MiB)")
	fs.IntVarP(&f.jobs, "jobs", "j", 0, "parallel readers and compressors (default: number of CPUs)")
	fs.BoolVarP(&f.quiet, "quiet", "q", false, "print no progress and no summary")
	fs.BoolVar(&f.json, "json", false, "print a machine-readable summary on stdout")
	f.sh.register(fs, "claiming parts of SRC in OUT one at a time (see --parts); without --parts, --shard K/N packs the fixed K-th of N parts (by a hash of the path); then --merge")
	fs.IntVar(&f.parts, "parts", 0, "cut SRC into `M` parts by path, claimed by the workers one at a time (default with --shard auto: 4 per worker)")
	fs.BoolVar(&f.merge, "merge", false, "write the dump document, lists and state from the packages of every shard in OUT (no SRC; give the shards' flags)")
	fs.StringVar(&f.hub, "hub", "", "`URL` of the WebSub hub the Source notifies (advertised in the Capability List): a framework notification of the documents each run creates or changes")
	fs.StringVar(&f.topic, "topic", "", "with --hub: `URL` prefix of the topics, framework and changes (default: the hub's URL and /)")
	fs.BoolVar(&f.changeNotification, "change-notification", false, "with --hub: also send a change notification of each --changes run's changes, on the changes topic")
	f.sign.register(fs, "sign", "sign-valid", "sign-passphrase-file", "sign every document (NAME.asc beside it) and every package (a <signature> in its .meta4) with the OpenPGP secret key in `KEYFILE` (armored or binary)")
	withS3 := s3Flag(fs)
	if err := parse(fs, args, packHelp, stdout); err != nil {
		return err
	}
	ctx, err := withS3(ctx, f.out, f.since)
	if err != nil {
		return err
	}
	opts, err := f.options(absArgs(fs.Args()))
	if err != nil {
		return err
	}
	if opts.Signer, err = f.sign.load(); err != nil {
		return err
	}
	return doPack(ctx, fs.Arg(0), f, opts, stdout, stderr)
}

func (f *packFlags) options(args []string) (pack.Options, error) {
	var o pack.Options
	switch {
	case f.merge && (len(args) != 0 || f.sh.shard != "" || f.parts != 0 || f.changes):
		return o, usagef("--merge takes no SRC, --shard, --parts or --changes: it reads the shards' output in -o OUT")
	case !f.merge && len(args) != 1:
		return o, usagef("pack takes one source directory, got %d arguments", len(args))
	}
	if f.out == "" || f.baseURL == "" {
		return o, usagef("pack needs -o OUTDIR and --base-url URL")
	}
	if resourcesync.IsURL(f.out) {
		if err := checkOutput(f.out); err != nil {
			return o, err
		}
	}
	if err := errors.Join(checkURL("--base-url", f.baseURL), checkURL("--dump-url", f.dumpURL), checkURL("--capability-list", f.capList), checkURL("--describedby", f.describedBy), checkURL("--hub", f.hub), checkURL("--topic", f.topic)); err != nil {
		return o, usageError{err}
	}
	if f.level < 1 || f.level > 9 || f.jobs < 0 {
		return o, usagef("--level must be 1 to 9, and --jobs not negative")
	}
	hashes, err := pack.ParseHashes(f.hashes)
	if err != nil {
		return o, usageError{err}
	}
	comp, err := pack.ParseCompression(f.compress)
	if err != nil {
		return o, usageError{err}
	}
	o = pack.Options{BaseURL: f.baseURL, DumpURL: f.dumpURL, CapabilityList: f.capList, Hashes: hashes,
		SourceDescription: f.sourceDesc, DescribedBy: f.describedBy,
		Compress: comp, Level: f.level, MaxPackageSize: f.maxSize, SkipChanged: f.skipChanged, Prune: f.prune,
		FollowSymlinks: f.follow, Jobs: f.jobs, Changes: f.changes, Since: f.since, Checksum: f.checksum}
	if (f.since != "" || f.checksum) && !f.changes {
		return o, usagef("--since and --checksum need --changes")
	}
	if f.maxSize <= 0 {
		return o, usagef("--max-package-size must be positive")
	}
	if err := f.metalinkOptions(&o); err != nil {
		return o, err
	}
	if err := f.channels(&o); err != nil {
		return o, err
	}
	if err := f.shardOptions(&o); err != nil {
		return o, err
	}
	if f.at != "" {
		if o.At, err = resourcesync.ParseTime(f.at); err != nil {
			return o, usagef("--at: %v", err)
		}
	}
	if err := o.Validate(); err != nil {
		return o, usageError{err}
	}
	return o, nil
}

// shardOptions are the worker's: a fixed shard (--shard K/N), or a
// worker claiming parts (--shard auto, or --parts M).
func (f *packFlags) shardOptions(o *pack.Options) error {
	t, ok, err := f.sh.task()
	switch {
	case err != nil:
		return err
	case f.parts < 0:
		return usagef("--parts must be positive")
	case f.sh.lease != 0 && f.parts == 0 && f.sh.shard != "auto":
		return usagef("--lease goes with claimed parts: --shard auto or --parts M")
	case !ok && f.parts == 0:
		return nil
	}
	if ok {
		f.task = &t
		o.Shard, o.Shards, o.Worker = t.K, t.N, t.String()
	}
	if f.parts == 0 && f.sh.shard != "auto" {
		return nil // a fixed shard
	}
	o.Parts, o.Lease = f.parts, f.sh.lease
	if o.Parts == 0 {
		o.Parts = partsPerWorker * t.N
	}
	return nil
}

// partsPerWorker is --shard auto's default number of parts per worker:
// enough that a heavy part holds one worker while the others take the
// rest, few enough that each part is worth its walk and its claim.
const partsPerWorker = 4

// channels are the notification channels of --hub, --topic and
// --change-notification.
func (f *packFlags) channels(o *pack.Options) error {
	if f.hub == "" {
		if f.topic != "" || f.changeNotification {
			return usagef("--topic and --change-notification need --hub")
		}
		return nil
	}
	if f.sh.shard != "" || f.parts != 0 {
		return usagef("--hub: a shard publishes no document; give it to --merge")
	}
	o.Channels = layout.Channels{Hub: f.hub, Topics: f.topic, ChangeNotification: f.changeNotification}
	return nil
}

func (f *packFlags) metalinkOptions(o *pack.Options) error {
	if !f.metalink {
		if len(f.mirrors) > 0 || f.pieceLength != 0 {
			return usagef("--mirror and --piece-length need --metalink")
		}
		return nil
	}
	if f.pieceLength < 0 {
		return usagef("--piece-length must be positive")
	}
	o.Metalink = &pack.MetalinkOptions{PieceLength: f.pieceLength}
	for _, s := range f.mirrors {
		m, err := layout.ParseMirror(s)
		if err != nil {
			return usageError{err}
		}
		o.Metalink.Mirrors = append(o.Metalink.Mirrors, m)
	}
	return nil
}

func doPack(ctx context.Context, src string, f packFlags, o pack.Options, stdout, stderr io.Writer) error {
	defer oversubscribe(o.Changes)()
	defer changesGC(o.Changes)()
	p := newProgress(stderr, f.quiet || f.json, "packing")
	done := 0
	draw := p.events(nil)
	o.Events = func(e finding.Event) { // one call at a time
		switch e := e.(type) {
		case finding.Progress:
			e.Unit = fmt.Sprintf("package %d", done+1)
			draw(e)
		case pack.PackageDone:
			done++
			if !f.quiet {
				p.message("rsdump: %s: %s, %s%s", e.Package.Name, fmtBytes(e.Package.Length), finding.Plural(e.Package.Bitstreams, "bitstream"), reusedNote(e.Package.Reused))
			}
		case finding.Finding:
			if !f.quiet {
				p.message("rsdump: %s", e)
			}
		case pack.Removed: // printed even with --quiet: it deletes files
			p.message("rsdump: removed %s: left from an earlier run, not in the new dump", e.Name)
		case finding.Note:
			if !f.quiet {
				p.message("rsdump: %s", e.Msg)
			}
		case pack.PartClaimed:
			if !f.quiet {
				p.message("rsdump: part %d of %d claimed%s", e.Part, e.Parts, takenOver(e.From))
			}
		}
	}
	if !f.quiet && f.task != nil {
		what := "a fixed shard"
		if o.Parts > 0 {
			what = fmt.Sprintf("claiming parts of %d in %s", o.Parts, f.out)
		}
		p.message("rsdump: %s: %s", f.task.describe(), what)
	}
	if p.shown() && o.Parts == 0 {
		go func() { // a stat-only walk, to size the bar; Pack does not wait for it
			if _, n, err := pack.Scan(ctx, src, o.FollowSymlinks); err == nil {
				p.setTotal(n)
			}
		}()
	}
	var res *pack.Result
	var err error
	if f.merge {
		res, err = pack.Merge(ctx, f.out, o)
	} else {
		res, err = pack.Pack(ctx, src, f.out, o)
	}
	p.done()
	var se *pack.SourceError
	if errors.As(err, &se) {
		return usageError{err}
	}
	if err != nil {
		return err
	}
	notifyHub(ctx, res, f.quiet, stderr)
	return printPackSummary(res, f, stdout)
}

// notifyHub tells the hub of the run's documents and changes: one line
// for each notification it took, and a warning for each it did not,
// which leaves the exit status alone: the dump is published either way.
func notifyHub(ctx context.Context, res *pack.Result, quiet bool, stderr io.Writer) {
	p := notify.Publisher{Events: func(e finding.Event) {
		switch e := e.(type) {
		case notify.Sent:
			if !quiet {
				fmt.Fprintf(stderr, "rsdump: notified %s: %s of %s on %s\n", e.Hub, e.Capability, finding.Plural(e.Entries, "entry"), e.Topic)
			}
		case finding.Finding:
			fmt.Fprintf(stderr, "rsdump: %s\n", e)
		}
	}}
	p.Publish(ctx, &res.Published)
}

func takenOver(from string) string {
	if from == "" {
		return ""
	}
	return ", taken over from " + from
}

func reusedNote(reused bool) string {
	if reused {
		return " (reused from the interrupted run)"
	}
	return ""
}

type packSummary struct {
	Packages   int            `json:"packages"`
	Reused     int            `json:"reused"`
	Bitstreams int            `json:"bitstreams"`
	Bytes      int64          `json:"bytes"`
	Skipped    int            `json:"skipped"`
	Seconds    float64        `json:"seconds"`
	MBps       float64        `json:"mb_per_s"`
	Document   string         `json:"document"`
	DumpURL    string         `json:"dump_url"`
	Changes    *changeSummary `json:"changes,omitempty"`
	// A worker's: which scheduler and K of N it took, and its parts.
	Scheduler string        `json:"scheduler,omitempty"`
	Shard     int           `json:"shard,omitempty"`
	Shards    int           `json:"shards,omitempty"`
	Parts     *partsSummary `json:"parts,omitempty"`
}

type partsSummary struct {
	Parts   int      `json:"parts"`
	Planned bool     `json:"planned"`
	Packed  []int    `json:"packed"`
	Done    int      `json:"done"`
	Held    []string `json:"held,omitempty"`
	Left    []string `json:"left,omitempty"`
}

type changeSummary struct {
	Created int    `json:"created"`
	Updated int    `json:"updated"`
	Deleted int    `json:"deleted"`
	From    string `json:"from"`
	Until   string `json:"until"`
}

func printPackSummary(res *pack.Result, f packFlags, stdout io.Writer) error {
	s := packSummary{Packages: len(res.Packages), Bitstreams: res.Bitstreams, Bytes: res.Bytes,
		Skipped: res.Skipped, Seconds: res.Elapsed.Seconds(), Document: res.Document, DumpURL: res.DumpURL}
	for _, p := range res.Packages {
		if p.Reused {
			s.Reused++
		}
	}
	if f.task != nil {
		s.Scheduler, s.Shard, s.Shards = cmp.Or(f.task.Scheduler, "none"), f.task.K, f.task.N
	}
	if r := res.Parts; r != nil {
		s.Parts = &partsSummary{Parts: r.Parts, Planned: r.Planned, Packed: append([]int{}, r.Packed...), Done: r.Done, Held: r.Held, Left: r.Left}
	}
	if f.changes {
		s.Changes = &changeSummary{Created: res.Created, Updated: res.Updated, Deleted: res.Deleted,
			From: resourcesync.FormatTime(res.From), Until: resourcesync.FormatTime(res.Until)}
	}
	if res.Elapsed > 0 {
		s.MBps = float64(res.Bytes) / 1e6 / res.Elapsed.Seconds()
	}
	if f.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(s)
	}
	if !f.quiet && s.Changes != nil {
		c := s.Changes
		if s.Packages == 0 {
			fmt.Fprintf(stdout, "no change since %s: nothing written\n", c.From)
			return nil
		}
		fmt.Fprintf(stdout, "changes from %s until %s: %d created, %d updated, %d deleted\n", c.From, c.Until, c.Created, c.Updated, c.Deleted)
	}
	if !f.quiet && s.Parts != nil {
		printParts(stdout, s.Parts)
		return nil
	}
	if !f.quiet {
		fmt.Fprintf(stdout, "%s: %s (%d reused), %s, %s in %s (%.1f MB/s), %d skipped\n",
			s.Document, finding.Plural(s.Packages, "package"), s.Reused, finding.Plural(s.Bitstreams, "bitstream"),
			fmtBytes(s.Bytes), res.Elapsed.Round(time.Millisecond), s.MBps, s.Skipped)
	}
	return nil
}

// printParts is a worker's summary: its parts, and what is left.
func printParts(w io.Writer, s *partsSummary) {
	packed := make([]string, len(s.Packed))
	for i, p := range s.Packed {
		packed[i] = strconv.Itoa(p)
	}
	fmt.Fprintf(w, "parts packed here: %s; %d of %d done", orText(strings.Join(packed, ", "), "none"), s.Done, s.Parts)
	switch {
	case s.Done == s.Parts:
		fmt.Fprintf(w, ": run pack --merge\n")
	default:
		fmt.Fprintf(w, "\n")
	}
	for _, h := range s.Held {
		fmt.Fprintf(w, "held by another worker: %s\n", h)
	}
	for _, l := range s.Left {
		fmt.Fprintf(w, "left (a rerun of any worker takes it): %s\n", l)
	}
}

// oversubscribe gives the Go scheduler two more Ps than its default (the
// cores, or the container's CPU quota) while pack runs, unless GOMAXPROCS
// is set. pack's reader and writer goroutines spend much of their time in
// read and write system calls (3.8 s of an 8 s run of the 4 GiB benchmark),
// which hold their P; with one P per core the hashing goroutines wait for
// a P while a core idles (13-19% idle on 2 cores). Two spare Ps let the
// kernel fill those gaps: on 2 cores, pairs of runs were a median 5.5%
// faster (benchmarks/README.md). Not for --changes: its walk's lstat
// calls are short and many, and two more Ps only add threads that take
// turns on the cores (on 100,000 files, 2 cores, 15 pairs: 0.31 s with
// them, 0.26 s without). It returns the function that gives the runtime
// its default back.
func oversubscribe(changes bool) func() {
	if changes || os.Getenv("GOMAXPROCS") != "" {
		return func() {}
	}
	runtime.GOMAXPROCS(runtime.GOMAXPROCS(0) + 2)
	return runtime.SetDefaultGOMAXPROCS
}

// changesGCPercent is the collector's GOGC during pack --changes.
const changesGCPercent = 400

// changesGC lets the collector run less often during pack --changes,
// unless GOGC is set. Such a run allocates steadily (a record per file,
// read and written three times) while its live heap stays a few MB: the
// join streams, and the sort holds at most one run of changes. With the
// default GOGC the collector ran every 4 MB, 38-50 times for 100,000
// files, and took about a third of the run's user CPU; at 400 the run
// took 14-20% less CPU and peaked at 75 MB instead of 40 MB, and the
// worst case (a million files, every one updated) at 109 MB of heap
// instead of 43 MB (benchmarks/README.md). The soft memory limit still
// bounds the heap. It returns the function that gives the collector its
// setting back.
func changesGC(changes bool) func() {
	if !changes || os.Getenv("GOGC") != "" {
		return func() {}
	}
	old := debug.SetGCPercent(changesGCPercent)
	return func() { debug.SetGCPercent(old) }
}
