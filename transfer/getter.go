package transfer

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/rsdump/rsdump/finding"
	"github.com/rsdump/rsdump/internal/httpc"
	"github.com/rsdump/rsdump/internal/safepath"
)

// Getter downloads files within one connection budget. Its methods are
// safe for concurrent use.
type Getter struct {
	opts   Options
	client *http.Client
	budget *budget
	parked atomic.Int64 // bytes of pieces waiting for their whole-file hash

	mu    sync.Mutex
	dumps map[string]bool // URLs Resolve read as dump documents
}

// New returns a Getter with o's settings.
func New(o Options) *Getter {
	o = o.withDefaults()
	g := &Getter{opts: o, client: o.Client, budget: newBudget(o.Connections, o.PerMirror),
		dumps: map[string]bool{}}
	if g.client == nil {
		g.client = newClient(o)
	}
	return g
}

// NewClient returns the HTTP client a Getter with o uses when o.Client is
// nil: rsdump's, with o's stall timeout for response headers and bodies,
// and o's minimum speed for the documents and resources it opens
// (httpc.Open; pieces are judged per mirror by the Getter). verify,
// unpack and sync read documents and resources with it, so that one
// --stall-timeout and one --min-speed hold for a whole run.
func NewClient(o Options) *http.Client { return newClient(o.withDefaults()) }

// newClient is httpc's client with pools sized for the budget, no
// transparent gzip (ranges are of the file's bytes) and the stall timeout
// as the wait for headers and for body bytes.
func newClient(o Options) *http.Client {
	return httpc.New(httpc.Options{
		ResponseHeaderTimeout: o.StallTimeout,
		StallTimeout:          o.StallTimeout,
		MinSpeed:              max(o.MinSpeed, 0), // negative: off
		MinSpeedWindow:        o.MinSpeedWindow,
		MaxIdleConns:          2 * o.Connections,
		MaxIdleConnsPerHost:   max(2*o.PerMirror, o.Connections), // a list's resources come from one host, up to Connections at once
		IdleConnTimeout:       90 * time.Second,
		DisableCompression:    true,
		ReadBufferSize:        64 << 10,
		HTTP1:                 o.HTTP1,
	})
}

// checkRedirect is httpc's rule (http and https only) for the probe,
// which follows redirects itself.
var checkRedirect = httpc.CheckRedirect

// Get downloads files into dir, Options.Files at a time, and returns a
// result per file in order. The error joins every file's error. Every
// file operation stays inside dir (see ErrSymlink).
func (g *Getter) Get(ctx context.Context, dir string, files []File) ([]*Result, error) {
	if err := checkNames(files); err != nil {
		return nil, err
	}
	root, err := openRoot(dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	results := make([]*Result, len(files))
	var total int64
	for _, f := range files {
		// All of them before any starts: Files at a time start later,
		// and a total that grew as each did made the share done fall.
		total += max(f.Size, 0)
	}
	if total > 0 {
		g.opts.Events(finding.Planned{Bytes: total})
	}
	var eg errgroup.Group
	eg.SetLimit(g.opts.Files)
	for i, f := range files {
		eg.Go(func() error { results[i] = g.getOne(ctx, root, dir, f, nil, false); return nil })
	}
	eg.Wait()
	var errs []error
	for _, r := range results {
		if r.Err != nil {
			errs = append(errs, r.Err)
		}
	}
	return results, errors.Join(errs...)
}

// checkNames refuses a name that is not a safe path under the output
// directory, and names that would share a path on disk: two files with
// one name, a file named like another's working file (p.zip and
// p.zip.part), a file inside another (a and a/b).
func checkNames(files []File) error {
	owner := map[string]string{} // path under dir → the file that writes it
	for _, f := range files {
		if err := localName(f.Name); err != nil {
			return fmt.Errorf("unsafe file name %q: %w", f.Name, err)
		}
		for _, p := range workPaths(f.Name) {
			switch o, taken := owner[p]; {
			case taken && o == f.Name:
				return fmt.Errorf("two files named %q", f.Name)
			case taken:
				return fmt.Errorf("file names %q and %q collide: both use %q while downloading", o, f.Name, p)
			}
			owner[p] = f.Name
		}
	}
	for _, f := range files {
		for dir := path.Dir(f.Name); dir != "."; dir = path.Dir(dir) {
			if o, taken := owner[dir]; taken {
				return fmt.Errorf("file name %q needs %q as a directory, but %q uses it as a file", f.Name, dir, o)
			}
		}
	}
	return nil
}

// localName says why name is not a safe path for a file under the output
// directory: internal/safepath's rules (no "..", absolute path, backslash,
// drive letter or control character, the same on every system), and no
// trailing slash, as a directory has.
func localName(name string) error {
	if strings.HasSuffix(name, "/") {
		return errors.New("name ends with a slash, as a directory does")
	}
	return safepath.Check(name)
}

// workPaths are the paths a download of name writes: the file itself, and
// beside it the .part, the state and the state's temporary file.
func workPaths(name string) []string {
	state := name + stateSuffix
	return []string{name, name + partSuffix, state, state + tmpSuffix}
}

// getOne downloads f; opened, when set, is given the download once its
// .part is open (Stream), and again for a download started over; held
// keeps its pieces in memory instead (StreamHeld).
func (g *Getter) getOne(ctx context.Context, root *os.Root, dir string, f File, opened func(*download), held bool) *Result {
	d, err := g.newDownload(dir, f)
	if err != nil {
		r := &Result{Name: f.Name, Size: f.Size, Err: err}
		g.opts.Events(r)
		return r
	}
	d.root, d.opened, d.held = root, opened, held
	err = d.run(ctx)
	if startOver(ctx, d, err) {
		d = g.again(d)
		err = d.run(ctx)
	}
	d.finished()
	r := d.result(err)
	if err == nil && g.opts.Completed != nil {
		r.Err = g.opts.Completed(ctx, r)
	}
	g.opts.Events(r)
	return r
}

// startOver reports whether d failed only because ranges it resumed from
// a state file, which no piece hash could check, broke the whole-file
// hash: hashMismatch removed them, so the file is fetched once more from
// the start, in this run.
func startOver(ctx context.Context, d *download, err error) bool {
	return errors.Is(err, ErrFileHash) && d.f.Pieces.Hashes == nil && d.res.Resumed > 0 && ctx.Err() == nil
}

// again replaces d with a fresh download of the same file that counts
// the bytes d fetched. The bytes d verified are to be verified again: they
// are more work ahead (finding.Planned).
func (g *Getter) again(d *download) *download {
	n, _ := g.newDownload(d.dir, d.f) // d.f passed newDownload once
	n.root, n.opened, n.held = d.root, d.opened, d.held
	n.fetched.Add(d.fetched.Load())
	if v := d.verified.Load(); v > 0 {
		g.opts.Events(finding.Planned{Bytes: v})
	}
	return n
}

// finished counts as done (finding.Progress) what is left of the file's
// size once its download ended, complete, skipped or failed.
func (d *download) finished() {
	if rest := d.f.Size - d.verified.Load(); rest > 0 {
		d.g.opts.Events(finding.Progress{Bytes: rest, Unit: d.f.Name})
	}
}

func (d *download) result(err error) *Result {
	d.mu.Lock()
	defer d.mu.Unlock()
	r := d.res
	r.Fetched = d.fetched.Load()
	r.Mirrors = d.mirrorResults()
	r.Err = err
	return &r
}

func (d *download) mirrorResults() []MirrorResult {
	out := make([]MirrorResult, len(d.mirrors))
	for i, m := range d.mirrors {
		out[i] = MirrorResult{URL: m.url, Bytes: m.bytes, Bad: m.bad, Dropped: m.dropped, NoRange: m.noRange != ""}
	}
	return out
}

// Mirrors returns the state of each mirror host now, for a caller that
// shows it.
func (g *Getter) Mirrors() []MirrorProgress { return g.budget.snapshot() }
