package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/rsdump/rsdump/finding"
	"github.com/rsdump/rsdump/layout"
	"github.com/rsdump/rsdump/serve"
	"github.com/rsdump/rsdump/trs"
	"github.com/rsdump/rsdump/websub"
)

const serveHelp = `Usage: rsdump serve DIR [--addr 127.0.0.1:8080] [--base-url URL] [--mirror URL...] [--resources SRC] [--hub] [--trs [--trs-keep N]]

Publishes DIR, a directory rsdump pack wrote, over HTTP: the dump
documents, packages, manifests and Metalinks under the path of --dump-url
(default: --base-url's, else /), the Capability List beside them and the
Source Description at /.well-known/resourcesync; the directory's own URL
is a page listing the documents, linking the Capability List with
<link rel="resourcesync">. Range, If-Range,
If-None-Match and HEAD are answered. Only names pack writes are served:
its journal, temporary files and anything else in DIR are not.

Package responses carry Metalink/HTTP (RFC 6249) fields: Digest: SHA-256=
from the dump document (never computed per request), a rel=duplicate Link
for each --mirror with its priority, and a rel=describedby Link to the
package's .meta4. Several serve processes over copies of DIR, each naming
the others with --mirror, are mirrors of one another.

With --resources SRC, the files under SRC (the tree pack was given) are
served under --base-url's path, so that a Resource List or Change List
client (resync-sync) can fetch them one by one; names are confined to SRC.
Symbolic links inside SRC are followed, but not into DIR: nothing of DIR
(its journal, state, temporary files, outputs) is reached through
--resources, whatever links or spelling lead there.

Only regular files are served: a FIFO, socket or device in DIR or SRC
answers 404 and is never opened. Connections are let go when a client
takes longer than --read-header-timeout to send a request's header (one
dribbling it, or sending nothing), --read-timeout to send a whole
request, --write-timeout to take each 128 KiB of a response (a long
download that keeps moving is never cut off), or stays idle between
requests for longer than --idle-timeout.

With --hub, a WebSub hub answers at /hub on the same host (its URL is
on the host of --dump-url, else --base-url, else the listening address,
and the startup line says it): subscribers POST hub.mode=subscribe or
unsubscribe there, and it verifies their intent, grants leases (10 days
by default, 5 minutes to 31 days), signs what it delivers to those that
gave a hub.secret and retries a failing subscriber with growing waits. A
Source posts a ResourceSync notification to it (Content-Type and Link
rel="self" naming the topic; only from this machine), or any publisher
sends hub.mode=publish with hub.topic for the hub to fetch. Topics must
be URLs on the hub's host; a GET of a topic under /hub/ (say
/hub/framework) answers its latest notification. Subscriptions and the
latest notifications are kept in DIR/.rsdump-hub.json, never served, so
they survive a restart. Past 100,000 subscriptions a new one is denied. A
hub whose URL is public connects to no loopback or private address. One
line per hub event goes to stderr. pack --hub notifies it; sync --follow
subscribes to it.

With --trs, an OSLC Tracked Resource Set 2.0 view of DIR answers at
trs under the documents' path (the startup line says its URL), derived
from the documents pack wrote, found through the Capability List: the
Resource List is the Base (an ldp:DirectContainer, paged with LDP next
links, its first page naming the cutoff event), the Change Lists are the
Change Log (a trs:Creation, trs:Modification or trs:Deletion per entry,
trs:order its position, the newest events inline, older segments linked
by trs:previous). Turtle, or RDF/XML to a client that prefers it; strong
ETags. --trs-keep N truncates the Change Log to its newest N events (never
past the Base's cutoff event); the Base's pages then get new URLs, and a
client that fell behind rebases. rsdump sync takes the TRS URL as SOURCE.

One line per request goes to stderr (unless --quiet). SIGINT or SIGTERM
stops accepting connections and lets requests in flight finish for up to
--grace.

Exit status: 0 stopped by a signal after every request finished, 1 failed
(the address is in use, requests cut off at shutdown), 2 usage error.

Examples:
  rsdump serve ./dump --addr 127.0.0.1:8080 --base-url http://127.0.0.1:8080/data/ --resources ./data --hub --trs --trs-keep 10000
  rsdump serve ./dump --addr :8081 --mirror http://b.example.net/dump/,priority=2
  rsdump serve ./dump --base-url https://example.org/data/ --dump-url https://example.org/dump/ --resources ./data
`

type serveFlags struct {
	addr, baseURL, dumpURL, resources string
	mirrors                           []string
	grace                             time.Duration
	timeouts                          serve.Timeouts
	quiet, hub, trs                   bool
	trsKeep                           int
	logMu                             sync.Mutex // one line at a time on stderr
}

func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var f serveFlags
	fs := newFlags("serve")
	fs.StringVar(&f.addr, "addr", "127.0.0.1:8080", "listen on `HOST:PORT` (port 0 picks a free one)")
	fs.StringVar(&f.baseURL, "base-url", "", "the `URL` prefix given to pack --base-url; --resources are served under its path")
	fs.StringVar(&f.dumpURL, "dump-url", "", "the `URL` prefix of the packages (pack --dump-url); DIR is served under its path (default: --base-url)")
	fs.StringArrayVar(&f.mirrors, "mirror", nil, "base `URL` of another copy of DIR's packages, optionally followed by ,priority=N and ,location=CC; announced in Link headers (repeatable)")
	fs.StringVar(&f.resources, "resources", "", "serve the files under `SRC` under --base-url's path")
	fs.DurationVar(&f.grace, "grace", 10*time.Second, "how long requests in flight may run on after SIGINT/SIGTERM")
	def := serve.DefaultTimeouts
	fs.DurationVar(&f.timeouts.ReadHeader, "read-header-timeout", def.ReadHeader, "let a client go that takes longer than `DURATION` to send a request's header")
	fs.DurationVar(&f.timeouts.Read, "read-timeout", def.Read, "let a client go that takes longer than `DURATION` to send a whole request")
	fs.DurationVar(&f.timeouts.Write, "write-timeout", def.Write, "cut a response off when the client takes longer than `DURATION` to take 128 KiB of it")
	fs.DurationVar(&f.timeouts.Idle, "idle-timeout", def.Idle, "close a kept-alive connection idle for `DURATION`")
	fs.BoolVarP(&f.quiet, "quiet", "q", false, "log no requests")
	fs.BoolVar(&f.hub, "hub", false, "also run a WebSub hub at /hub, for ResourceSync notifications")
	fs.BoolVar(&f.trs, "trs", false, "also serve an OSLC Tracked Resource Set 2.0 view of DIR at trs under the documents' path")
	fs.IntVar(&f.trsKeep, "trs-keep", 0, "with --trs, keep only the newest `N` events in the Change Log (0: all)")
	if err := parse(fs, args, serveHelp, stdout); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usagef("serve takes one DIR, got %d", fs.NArg())
	}
	opts, err := f.options(stderr)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", f.addr)
	if err != nil {
		return err
	}
	defer ln.Close()
	var hub *websub.Hub
	if f.hub {
		if hub, err = f.newHub(fs.Arg(0), ln.Addr(), stderr); err != nil {
			return err
		}
		defer hub.Close()
		opts.Hub = hub
	}
	h, err := serve.New(fs.Arg(0), opts)
	if err != nil {
		return usageError{err}
	}
	defer h.(io.Closer).Close()
	return f.listenAndServe(ctx, h, ln, fs.Arg(0), hub, stderr)
}

// hubStateName is the hub's state file in the served directory: a name
// pack never writes, so serve never serves it.
const hubStateName = ".rsdump-hub.json"

// newHub makes the hub of --hub: its URL on the host the documents are
// published at, else the listening address; topics only on that host;
// one line per event on stderr.
func (f *serveFlags) newHub(dir string, addr net.Addr, stderr io.Writer) (*websub.Hub, error) {
	origin := "http://" + addr.String()
	for _, s := range []string{f.dumpURL, f.baseURL} {
		if u, err := url.Parse(s); err == nil && u.Host != "" {
			origin = u.Scheme + "://" + u.Host
			break
		}
	}
	u, _ := url.Parse(origin)
	return websub.New(websub.Options{
		URL:       origin + serve.HubPath,
		StateFile: filepath.Join(dir, hubStateName),
		// A hub the Internet reaches must not be made to connect into its
		// own network; one on loopback or a private network serves it.
		PublicOnly: websub.PublicHost(u.Host),
		AllowTopic: func(topic string) error {
			if !strings.HasPrefix(topic, origin+"/") {
				return fmt.Errorf("this hub takes topics on %s only", origin)
			}
			return nil
		},
		Events: func(ev finding.Event) {
			e, ok := ev.(websub.Event)
			if !ok {
				return
			}
			f.logMu.Lock()
			defer f.logMu.Unlock()
			fmt.Fprintln(stderr, escapeControl(hubLine(e)))
		},
	})
}

// hubLine is one hub event: what, the topic, the subscriber's callback,
// the figures of the kind, and the error.
func hubLine(e websub.Event) string {
	s := "rsdump: hub: " + e.Kind.String()
	if e.Topic != "" {
		s += " " + e.Topic
	}
	if e.Callback != "" {
		s += " for " + e.Callback
	}
	switch e.Kind {
	case websub.Subscribed:
		s += fmt.Sprintf(" (lease %s)", e.Lease)
	case websub.Published:
		s += " (" + finding.Plural(e.Subscribers, "subscriber") + ")"
	case websub.Delivered, websub.Dropped:
		s += fmt.Sprintf(" (attempt %d)", e.Attempt)
	case websub.Retrying:
		s += fmt.Sprintf(" (attempt %d, next in %s)", e.Attempt, e.Wait)
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

func (f *serveFlags) options(stderr io.Writer) (serve.Options, error) {
	o := serve.Options{BaseURL: f.baseURL, DumpURL: f.dumpURL, Resources: f.resources}
	if err := checkURL("--base-url", f.baseURL); err != nil {
		return o, err
	}
	if err := checkURL("--dump-url", f.dumpURL); err != nil {
		return o, err
	}
	for _, d := range []struct {
		flag string
		v    time.Duration
	}{{"--read-header-timeout", f.timeouts.ReadHeader}, {"--read-timeout", f.timeouts.Read}, {"--write-timeout", f.timeouts.Write}, {"--idle-timeout", f.timeouts.Idle}} {
		if d.v <= 0 {
			return o, usagef("%s must be positive", d.flag)
		}
	}
	switch {
	case f.trsKeep < 0:
		return o, usagef("--trs-keep must not be negative")
	case f.trsKeep > 0 && !f.trs:
		return o, usagef("--trs-keep needs --trs")
	case f.trs:
		o.TRS = &trs.Options{Keep: f.trsKeep}
	}
	if f.resources != "" && f.baseURL == "" {
		return o, usagef("--resources needs --base-url, the prefix of the resources' URLs")
	}
	for _, s := range f.mirrors {
		m, err := layout.ParseMirror(s)
		if err != nil {
			return o, usageError{err}
		}
		o.Mirrors = append(o.Mirrors, m)
	}
	if !f.quiet {
		o.Log = func(r serve.Request) {
			f.logMu.Lock()
			defer f.logMu.Unlock()
			fmt.Fprintln(stderr, logLine(r))
		}
	}
	return o, nil
}

// logLine is one request: client, method, path, status, bytes, range,
// time taken.
func logLine(r serve.Request) string {
	rng := "-"
	if r.Range != "" {
		rng = r.Range
	}
	return escapeControl(fmt.Sprintf("%s %s %s %s %d %d %s %s", r.Time.UTC().Format(time.RFC3339),
		r.Remote, r.Method, r.Path, r.Status, r.Bytes, rng, r.Duration.Round(time.Microsecond)))
}

func (f *serveFlags) listenAndServe(ctx context.Context, h http.Handler, ln net.Listener, dir string, hub *websub.Hub, stderr io.Writer) error {
	srv := serve.NewServer(h, f.timeouts)
	with := ""
	if hub != nil {
		with = ", WebSub hub at " + hub.URL()
	}
	if f.trs {
		with += ", Tracked Resource Set at " + f.trsURL(ln.Addr())
	}
	fmt.Fprintf(stderr, "rsdump: serving %s at http://%s/%s\n", escapeControl(dir), ln.Addr(), escapeControl(with))
	done := make(chan error, 1)
	go func() { done <- srv.Serve(serve.Coalesce(ln)) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	fmt.Fprintln(stderr, "rsdump: shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), f.grace)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		srv.Close()
		return fmt.Errorf("shutdown: requests still running after %s were cut off", f.grace)
	}
	if err := <-done; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// trsURL is where --trs serves the Tracked Resource Set: under the path
// of --dump-url (else --base-url), on its host when it names one, else on
// the listening address.
func (f *serveFlags) trsURL(addr net.Addr) string {
	for _, s := range []string{f.dumpURL, f.baseURL} {
		if s == "" {
			continue
		}
		if u, err := url.Parse(s); err == nil {
			if u.Host == "" {
				u.Scheme, u.Host = "http", addr.String()
			}
			u.Path = strings.TrimSuffix(u.Path, "/") + "/" + serve.TRSName
			u.RawPath, u.RawQuery, u.Fragment = "", "", ""
			return u.String()
		}
	}
	return "http://" + addr.String() + "/" + serve.TRSName
}
