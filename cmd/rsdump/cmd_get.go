package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/rsdump/rsdump/deststate"
	"github.com/rsdump/rsdump/finding"
	"github.com/rsdump/rsdump/replica"
	"github.com/rsdump/rsdump/resourcesync"
	"github.com/rsdump/rsdump/transfer"
	"github.com/rsdump/rsdump/unpack"
)

const getHelp = `Usage: rsdump get SOURCE... [-o DIR] [flags]

Downloads every file a SOURCE names, from all of its mirrors at once.
A SOURCE is a Metalink document (path or URL), a dump document
(resourcedump.xml, changedump.xml: each package, its rel="duplicate"
mirrors and its rel="describedby" Metalink; or a sitemap index of such
documents, each fetched), or a plain http(s) URL of a package (a ZIP),
whose Link and Digest headers (RFC 6249) add mirrors and a hash. Anything
else (an HTML page, a Capability List, a text file) is refused before
anything is downloaded, with a hint naming the Resource Dump or Change
Dump that discovery finds from it.

Each piece is checked against the Metalink piece hash before it counts;
files without piece hashes are checked by their whole-file hash. A file is
written as NAME.part beside NAME.rsdump-state and renamed to NAME only
after its size and hash match. Run the same command again after an
interruption (Ctrl-C, a crash, SIGKILL) to resume; complete files are
skipped when their hash or piece hashes match (a file with no hash at all
is fetched again). NAME.rsdump-state is only a hint: what it says was
verified is hashed again from NAME.part (a local read) before it counts.
A file whose source gives no hash at all is never resumed, and is
published with a warning that it is unverified ("unverified": true in
--json). Every path stays inside DIR: a symbolic link that leads out of
it, or stands in place of NAME or one of its working files, is refused.

With --unpack DIR, each package is handed to unpack (as rsdump unpack
PACKAGE DIR would) once it and every package listed before it are
verified, so that Change Dump packages apply in order; after a Change
Dump package fails to unpack, the packages after it are held back.

Of a dump document, once every package arrived, get saves the dump's
documents beside them (the document, index parts, detached manifests,
Metalinks); one it cannot read in full from anywhere fails the run,
naming it, and then none of that dump's documents is saved.

Exit status: 0 success, 1 failure (a file could not be fetched or did not
match its hash, the others are still finished; a dump document that could
not be saved; a SOURCE that is none of the above), 2 usage error,
130 interrupted (the state is saved).

Examples:
  rsdump get https://example.org/dump/resourcedump.xml -o ./dump
  rsdump get resourcedump-00001.zip.meta4 --connections 32 --location de,nl
  rsdump get https://example.org/dump/resourcedump.xml -o ./dump \
      --unpack ./tree --base-url https://example.org/data/ --json
`

type getFlags struct {
	http1                  bool // --http1.1: HTTP/1.1 only
	out, locations, unpack string
	baseURL, layout        string
	connections, perMirror int
	files, maxFailures     int
	stall                  time.Duration
	minSpeed               int64
	quiet, json            bool
}

func runGet(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var f getFlags
	fs := newFlags("get")
	fs.StringVarP(&f.out, "output", "o", ".", "write the files into `DIR`")
	fs.IntVar(&f.connections, "connections", 16, "`N` requests in flight in total, over all files and mirrors (connections over HTTP/1.1, streams over HTTP/2)")
	fs.IntVar(&f.perMirror, "per-mirror", 4, "`N` requests in flight per mirror (counted per host:port)")
	fs.IntVar(&f.files, "files", 4, "`N` files downloaded at once")
	fs.DurationVar(&f.stall, "stall-timeout", 20*time.Second, "retry a request elsewhere after `DURATION` without progress")
	fs.Var(newSizeValue(&f.minSpeed, 1<<10), "min-speed", "drop a mirror for a file when it delivers under `SIZE` bytes per second over 30s (0: never)")
	fs.IntVar(&f.maxFailures, "max-failures", 8, "drop a mirror for a file after `N` failures in a row")
	fs.StringVar(&f.locations, "location", "", "prefer mirrors in these `COUNTRIES` (ISO 3166 codes, comma-separated, best first)")
	fs.StringVar(&f.unpack, "unpack", "", "unpack each verified package into `DIR` as soon as it and those before it are complete")
	fs.StringVar(&f.baseURL, "base-url", "", "with --unpack: the `URL` prefix the Source used (as for rsdump unpack)")
	fs.StringVar(&f.layout, "layout", "url", "with --unpack: place bitstreams by `LAYOUT` url (relative to --base-url) or path (the manifest path)")
	fs.BoolVarP(&f.quiet, "quiet", "q", false, "print no progress and no summary")
	fs.BoolVar(&f.json, "json", false, "print a machine-readable summary per file on stdout")
	parseReading := readerFlags(fs, &f.http1)
	ctx, err := parseReading(ctx, args, getHelp, stdout, &f.baseURL)
	if err != nil {
		return err
	}
	opts, err := f.options(fs.Args())
	if err != nil {
		return err
	}
	uopts, err := unpackOptions(f)
	if err != nil {
		return err
	}
	sources, err := parseLocations("SOURCE", fs.Args())
	if err != nil {
		return err
	}
	return doGet(ctx, sources, f, opts, uopts, stdout, stderr)
}

func (f *getFlags) options(args []string) (transfer.Options, error) {
	o := transfer.Options{Connections: f.connections, PerMirror: f.perMirror, Files: f.files, HTTP1: f.http1,
		StallTimeout: f.stall, MaxFailures: f.maxFailures, MinSpeed: f.minSpeed}
	if f.minSpeed == 0 {
		o.MinSpeed = -1 // off, as aria2's --lowest-speed-limit=0
	}
	if len(args) == 0 {
		return o, usagef("get needs at least one SOURCE")
	}
	if f.connections < 1 || f.perMirror < 1 || f.files < 1 || f.maxFailures < 1 {
		return o, usagef("--connections, --per-mirror, --files and --max-failures must be at least 1")
	}
	if f.stall <= 0 {
		return o, usagef("--stall-timeout must be positive")
	}
	if err := checkSource("--base-url", f.baseURL); err != nil {
		return o, err
	}
	if f.locations != "" {
		o.Locations = strings.Split(strings.ToLower(f.locations), ",")
	}
	return o, nil
}

func doGet(ctx context.Context, sources []resourcesync.Location, f getFlags, o transfer.Options, uo unpack.Options, stdout, stderr io.Writer) error {
	pr := newProgress(stderr, f.quiet || f.json, "getting")
	o.Events = pr.events(getEvents(pr, f.quiet))
	var seq *unpack.Sequence
	if f.unpack != "" {
		o.Completed = func(ctx context.Context, r *transfer.Result) error { return seq.Arrived(ctx, r.Name, r.Path) }
	}
	g := transfer.New(o)
	var files []transfer.File
	for _, src := range sources {
		fs, err := g.Resolve(ctx, src.String())
		if errors.Is(err, transfer.ErrNotGettable) {
			return hinted{err, getHints(ctx, transfer.NewClient(o), src)}
		}
		if err != nil {
			return nameSource(src.String(), err)
		}
		files = append(files, fs...)
	}
	if f.unpack != "" {
		seq = newSequence(f.unpack, uo, files, pr.message)
	}
	pr.polledNote(func() string { return mirrorsNote(g.Mirrors()) })
	results, err := g.Get(ctx, f.out, files)
	pr.done()
	err = errors.Join(err, seq.Leftovers())
	var docs []string
	if err == nil {
		docs, err = saveDocuments(ctx, g, f.out, locStrings(sources))
	}
	if perr := printGetSummary(results, docs, err, f, stdout); perr != nil && err == nil {
		err = perr
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}

// nameSource prefixes err with the source it is about, unless it names
// it already.
func nameSource(src string, err error) error {
	if strings.Contains(err.Error(), src) {
		return err
	}
	return fmt.Errorf("%s: %w", src, err)
}

// getHints suggest, for a source get refuses (an HTML page, a Capability
// List, a resource), the dumps to get instead: what discovery (§6.3, as
// rsdump sync does it) finds from it, through an HTML page's <link
// rel="resourcesync">, a Link header or a Capability List.
func getHints(ctx context.Context, c *http.Client, src resourcesync.Location) []string {
	s, err := replica.Discover(ctx, c, src)
	if err != nil {
		return nil
	}
	linked := len(s.Route) > 1 && (s.Route[1] == "html link" || s.Route[1] == "link header")
	lead := "it leads to"
	switch {
	case s.CapabilityList == src.String():
		lead = "it lists"
	case s.CapabilityList != "" && linked:
		lead = `it links the Capability List ` + s.CapabilityList + ` (rel="resourcesync"), which lists`
	case s.CapabilityList != "":
		lead = "it leads to the Capability List " + s.CapabilityList + ", which lists"
	}
	var hints []string
	for _, c := range []struct{ cap, name string }{
		{resourcesync.CapResourceDump, "Resource Dump"}, {resourcesync.CapChangeDump, "Change Dump"},
	} {
		if u := s.Docs[c.cap]; u != "" {
			hints = append(hints, fmt.Sprintf("%s the %s: rsdump get %s", lead, c.name, u))
		}
	}
	if len(hints) == 0 && s.CapabilityList != "" {
		hints = append(hints, fmt.Sprintf("%s no dump: rsdump sync %s --dest DIR copies the Source resource by resource", lead, src))
	}
	return hints
}

// getEvents prints the transfer engine's news between progress frames: a
// mirror dropped (a warning), a server without Range support (once per
// server: its mirrors are kept for one whole-file connection, a note, not
// a drop), a resumed file.
func getEvents(p *progress, quiet bool) func(finding.Event) {
	var mu sync.Mutex
	noRange := map[string]bool{}
	return func(e finding.Event) {
		if quiet {
			return
		}
		switch e := e.(type) {
		case *transfer.MirrorDropped:
			p.message("rsdump: warning: %s: dropped %s: %s", e.File, e.URL, e.Reason)
		case *transfer.MirrorNoRange:
			host := e.URL
			if u, err := url.Parse(e.URL); err == nil {
				host = u.Host
			}
			mu.Lock()
			seen := noRange[host]
			noRange[host] = true
			mu.Unlock()
			if !seen {
				p.message("rsdump: %s ignores Range requests (%s): its files come over one connection each, and only when no other mirror is left", host, e.URL)
			}
		case *transfer.Result:
			if e.Unverified && e.Err == nil {
				p.message("rsdump: warning: %s: the source gives no hash; published unverified", e.Name)
			}
		case *transfer.FileStart:
			if e.Resumed > 0 {
				p.message("rsdump: %s: resuming, %s of %s already verified", e.Name, fmtBytes(e.Resumed), fmtBytes(e.Size))
			}
		}
	}
}

// mirrorsNote is "2 of 3 mirrors active, 8 connections".
func mirrorsNote(ms []transfer.MirrorProgress) string {
	active, conns := 0, 0
	for _, m := range ms {
		conns += m.Active
		if m.Active > 0 {
			active++
		}
	}
	return fmt.Sprintf("%d of %s active, %s", active, finding.Plural(len(ms), "mirror"), finding.Plural(conns, "connection"))
}

// getReport is get's one --json document: a summary per file, in order.
type getReport struct {
	Files      []getSummary `json:"files"`
	Documents  []string     `json:"documents,omitempty"` // a dump's documents, saved beside its packages
	Bytes      int64        `json:"bytes"`
	Failed     int          `json:"failed"`
	Unverified int          `json:"unverified"` // files published with no hash to check them
	// Error is why the run failed (files, or a dump's documents that
	// could not be saved), as on stderr, with the exit status.
	Error      string `json:"error,omitempty"`
	ExitStatus int    `json:"exit_status,omitempty"`
}

type getSummary struct {
	Name       string           `json:"name"`
	Path       string           `json:"path,omitempty"`
	Bytes      int64            `json:"bytes"`
	Skipped    bool             `json:"skipped"`
	Unverified bool             `json:"unverified"` // published with no hash to check it
	Resumed    int64            `json:"resumed_bytes"`
	Fetched    int64            `json:"fetched_bytes"`
	Mirrors    map[string]int64 `json:"bytes_per_mirror"`
	Bad        map[string]int   `json:"bad_pieces_per_mirror,omitempty"`
	Refetch    int              `json:"pieces_refetched"`
	Retries    int              `json:"retries"`
	Dropped    []droppedMirror  `json:"mirrors_dropped"`
	NoRange    []string         `json:"mirrors_without_range"`
	Seconds    float64          `json:"seconds"`
	MBps       float64          `json:"mb_per_s"`
	Error      string           `json:"error,omitempty"`
}

type droppedMirror struct {
	URL    string `json:"url"`
	Reason string `json:"reason"`
}

func summarize(r *transfer.Result) getSummary {
	s := getSummary{Name: r.Name, Path: r.Path, Bytes: r.Size, Skipped: r.Skipped, Unverified: r.Unverified, Resumed: r.Resumed,
		Fetched: r.Fetched, Mirrors: map[string]int64{}, Bad: map[string]int{}, Refetch: r.Refetch,
		Retries: r.Retries, Dropped: []droppedMirror{}, NoRange: []string{}, Seconds: r.Elapsed.Seconds()}
	for _, m := range r.Mirrors {
		s.Mirrors[m.URL] = m.Bytes
		if m.Bad > 0 {
			s.Bad[m.URL] = m.Bad
		}
		if m.Dropped != "" {
			s.Dropped = append(s.Dropped, droppedMirror{m.URL, m.Dropped})
		}
		if m.NoRange && m.Dropped == "" {
			s.NoRange = append(s.NoRange, m.URL)
		}
	}
	if r.Elapsed > 0 && !r.Skipped {
		s.MBps = float64(r.Size-r.Resumed) / 1e6 / r.Elapsed.Seconds()
	}
	if r.Err != nil {
		s.Error = r.Err.Error()
	}
	return s
}

// printGetSummary prints a line per file fetched (a failed file's error
// goes to stderr), or with --json one document for the whole run, which
// says the run's error, if any.
func printGetSummary(results []*transfer.Result, docs []string, runErr error, f getFlags, stdout io.Writer) error {
	rep := getReport{Files: []getSummary{}, Documents: docs}
	switch {
	case errors.Is(runErr, context.Canceled):
		rep.Error, rep.ExitStatus = runErr.Error(), exitCanceled
	case runErr != nil:
		rep.Error, rep.ExitStatus = runErr.Error(), exitFailed
	}
	for _, r := range results {
		if r == nil {
			continue
		}
		s := summarize(r)
		rep.Files = append(rep.Files, s)
		rep.Bytes += r.Size
		if r.Err != nil {
			rep.Failed++
		}
		if s.Unverified {
			rep.Unverified++
		}
		switch {
		case f.json, f.quiet, r.Err != nil:
		case r.Skipped:
			fmt.Fprintf(stdout, "%s: already complete\n", escapeControl(r.Path))
		default:
			fmt.Fprintf(stdout, "%s: %s in %s (%.1f MB/s)%s\n", escapeControl(r.Path), fmtBytes(r.Size), r.Elapsed.Round(time.Millisecond), s.MBps, getNotes(s))
		}
	}
	if f.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	if len(docs) > 0 && !f.quiet {
		fmt.Fprintf(stdout, "%s saved beside the packages: %s\n", finding.Plural(len(docs), "dump document"), strings.Join(docs, ", "))
	}
	return nil
}

// saveDocuments saves, once every package arrived, the documents of each
// dump among the sources, so that the output directory is a copy of the
// dump that rsdump verify and rsdump unpack take as they take the original.
// A dump whose documents cannot all be saved is an error, one per dump;
// the other dumps' documents are saved all the same.
func saveDocuments(ctx context.Context, g *transfer.Getter, dir string, sources []string) ([]string, error) {
	var saved []string
	var errs []error
	for _, src := range sources {
		docs, err := g.SaveDocuments(ctx, dir, src)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: every package arrived, but not all of the dump's documents, so none of them was saved: %w", src, err))
		}
		saved = append(saved, docs...)
	}
	return saved, errors.Join(errs...)
}

// getNotes names what went less than smoothly for a file that arrived:
// refetches, retries, mirrors without Range support (not a failure) and
// mirrors that failed. A mirror merely idle at the end is not mentioned.
func getNotes(s getSummary) string {
	var notes []string
	if s.Unverified {
		notes = append(notes, "UNVERIFIED: the source gives no hash")
	}
	if s.Refetch > 0 {
		notes = append(notes, finding.Plural(s.Refetch, "piece")+" refetched")
	}
	switch {
	case s.Retries == 1:
		notes = append(notes, "1 retry")
	case s.Retries > 1:
		notes = append(notes, finding.Plural(s.Retries, "retry"))
	}
	if n := len(s.NoRange); n > 0 {
		notes = append(notes, finding.Plural(n, "mirror")+" without Range support")
	}
	if n := len(s.Dropped); n > 0 {
		notes = append(notes, finding.Plural(n, "mirror")+" failed")
	}
	if len(notes) == 0 {
		return ""
	}
	return "; " + strings.Join(notes, ", ")
}

// unpackOptions checks the --unpack flags before anything is fetched.
func unpackOptions(f getFlags) (unpack.Options, error) {
	if f.unpack == "" {
		return unpack.Options{}, nil
	}
	layout, err := deststate.ParseLayout(f.layout)
	if err != nil {
		return unpack.Options{}, usageError{err}
	}
	if layout == deststate.ByURI && f.baseURL == "" {
		return unpack.Options{}, usagef("--unpack needs --base-url URL (the prefix of the bitstream URIs), or --layout path")
	}
	m, err := deststate.NewMapper(layout, f.baseURL)
	if err != nil {
		return unpack.Options{}, usageError{err}
	}
	return unpack.Options{Mapper: m}, nil
}

// newSequence unpacks the files in their order as they complete, telling
// msg what became of each.
func newSequence(dir string, o unpack.Options, files []transfer.File, msg func(string, ...any)) *unpack.Sequence {
	names := make([]string, len(files))
	for i, f := range files {
		names[i] = f.Name
	}
	seq := unpack.NewSequence(dir, o, names)
	seq.Unpacked = func(name string, res *unpack.Result, err error) {
		if err != nil {
			msg("rsdump: %s: %v", name, err)
			return
		}
		msg("rsdump: %s: unpacked %s into %s (%d already present)", name, finding.Plural(res.Written, "bitstream"), dir, res.Present)
	}
	return seq
}
