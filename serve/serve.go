// Package serve publishes a directory written by pack over HTTP: the dump
// documents, packages, manifests and Metalinks, the Capability List and
// the Source Description at /.well-known/resourcesync (Z39.99-2014 §6.3),
// and optionally the resources themselves, for clients that fetch them one
// by one from a Resource List or Change List. Package responses carry the
// Metalink/HTTP header fields of RFC 6249, so that a Metalink client finds
// every mirror and the package's SHA-256 from any one of them. Only names
// pack writes are served (layout.IsOutput); everything else is 404.
package serve

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/rsdump/rsdump/layout"
	"github.com/rsdump/rsdump/resourcesync"
	"github.com/rsdump/rsdump/sign"
	"github.com/rsdump/rsdump/trs"
)

// Options configure a handler. The zero value serves the directory at the
// root path, with no mirrors and no resources.
type Options struct {
	// BaseURL is the prefix of the resources' URLs (pack's --base-url).
	// With Resources, they are served under its path.
	BaseURL string
	// DumpURL is the prefix of the packages' and documents' URLs (pack's
	// --dump-url); the directory is served under its path. Default: the
	// BaseURL, else "/". When it names a host, header links are absolute
	// URLs on it; otherwise they are built on the request's host.
	DumpURL string
	// Mirrors are the other places the packages are published, each a
	// base URL as pack's --mirror takes it; they are announced on package
	// responses as rel=duplicate links with their priority and location.
	Mirrors []layout.Mirror
	// Resources is a directory served under BaseURL's path: the tree pack
	// was given, so that a Resource List's <loc>s can be fetched. Empty
	// serves no resources.
	Resources string
	// Hub, when set, answers every request for HubPath and under it: a
	// WebSub hub (websub.Hub) and its topics. It shadows a resource of
	// that name.
	Hub http.Handler
	// TRS, when set, serves the OSLC Tracked Resource Set view of the
	// directory (package trs) at TRSName under the dump URL's path, and
	// the Base and Change Log under it: Keep, PageSize and SegmentSize are
	// taken from it, the rest is set here. It shadows a resource of that
	// name.
	TRS *trs.Options
	// Log, when set, is called once for every request after it is
	// answered, from the request's goroutine.
	Log func(Request)
}

// HubPath is where Options.Hub is served.
const HubPath = "/hub"

// Request is what the log is told about one request.
type Request struct {
	Time     time.Time // when it arrived
	Remote   string    // the client's address
	Method   string
	Path     string
	Range    string // the Range header, if any
	Status   int
	Bytes    int64 // body bytes written
	Duration time.Duration
}

type handler struct {
	dir       *os.Root
	res       *os.Root    // nil: no resources
	hide      os.FileInfo // DIR, which the resources route does not enter
	resHidden bool        // res is DIR itself: no resource is served
	resDir    *os.File    // res's directory, for readSmall
	dirs      *dirCache   // readSmall's, nil without resources
	dumpPath  string      // with a trailing slash
	basePath  string
	dumpURL   string // absolute prefix, or "" to build one from the request
	mirrors   []layout.Mirror
	log       func(Request)
	sums      *digests
	hub       http.Handler
	trs       *trs.Handler
	seen      atomic.Pointer[seenLink] // resourceLink's
}

// New returns a handler serving dir, a directory pack wrote (or is
// writing: whatever of its outputs is there is served, and what changes
// is seen on the next request). The handler is also an io.Closer that
// releases the directories it holds open.
func New(dir string, opts Options) (http.Handler, error) {
	h := &handler{log: opts.Log, hub: opts.Hub}
	if err := h.setURLs(opts); err != nil {
		return nil, err
	}
	for _, m := range opts.Mirrors {
		u, err := resourcesync.CleanBaseURL(m.BaseURL)
		if err != nil {
			return nil, fmt.Errorf("mirror: %w", err)
		}
		m.BaseURL = u
		h.mirrors = append(h.mirrors, m)
	}
	var err error
	if h.dir, err = openDir(dir); err != nil {
		return nil, err
	}
	if opts.Resources != "" {
		if h.res, err = openDir(opts.Resources); err != nil {
			h.dir.Close()
			return nil, fmt.Errorf("resources: %w", err)
		}
		if h.hide, err = h.dir.Stat("."); err != nil {
			h.Close()
			return nil, err
		}
		// The directory an open root names does not change: it is
		// compared with DIR once, not at each request (open).
		fi, err := h.res.Stat(".")
		if err != nil {
			h.Close()
			return nil, err
		}
		h.resHidden = os.SameFile(fi, h.hide)
		if h.resDir, err = h.res.Open("."); err != nil {
			h.Close()
			return nil, err
		}
		h.dirs = newDirCache()
	}
	h.sums = newDigests(h.dir)
	if opts.TRS != nil {
		if err := h.mountTRS(*opts.TRS); err != nil {
			h.Close()
			return nil, err
		}
	}
	return h, nil
}

// Close releases the directories; requests after it are answered 404.
func (h *handler) Close() error {
	err := h.dir.Close()
	if h.trs != nil {
		err = errors.Join(err, h.trs.Close())
	}
	if h.res != nil {
		err = errors.Join(err, h.res.Close())
	}
	if h.resDir != nil {
		err = errors.Join(err, h.resDir.Close())
	}
	if h.dirs != nil {
		h.dirs.close()
	}
	return err
}

// setURLs takes the paths the directory and the resources are served
// under from the two URLs.
func (h *handler) setURLs(opts Options) error {
	base, err := prefix("base URL", opts.BaseURL)
	if err != nil {
		return err
	}
	h.basePath = base.Path
	dump := base
	if opts.DumpURL != "" {
		if dump, err = prefix("dump URL", opts.DumpURL); err != nil {
			return err
		}
	}
	h.dumpPath = dump.Path
	if dump.Host != "" {
		h.dumpURL = dump.String()
	}
	return nil
}

// prefix parses a base URL, or a bare path, into a URL whose path ends in
// a slash; empty is "/".
func prefix(what, s string) (*url.URL, error) {
	if s == "" {
		return &url.URL{Path: "/"}, nil
	}
	if resourcesync.IsURL(s) {
		clean, err := resourcesync.CleanBaseURL(s)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		s = clean
	}
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return nil, fmt.Errorf("%s: %w", what, err)
	case u.Host == "" && u.Scheme != "", !strings.HasPrefix(u.Path, "/"):
		return nil, fmt.Errorf("%s %q is neither an http(s) URL nor an absolute path", what, s)
	}
	if !strings.HasSuffix(u.Path, "/") {
		u.Path += "/"
	}
	u.RawPath, u.RawQuery, u.Fragment = "", "", ""
	return u, nil
}

func openDir(dir string) (*os.Root, error) {
	fi, err := os.Stat(dir)
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("%s: not a directory", dir)
	}
	return os.OpenRoot(dir)
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rec := &recorder{ResponseWriter: w}
	start := time.Now()
	h.route(rec, r)
	if h.log != nil {
		h.log(Request{
			Time: start, Remote: r.RemoteAddr, Method: r.Method, Path: r.URL.RequestURI(),
			Range: r.Header.Get("Range"), Status: rec.status(), Bytes: rec.n, Duration: time.Since(start),
		})
	}
}

// route finds what a request names: the hub, the Source Description,
// one of the directory's outputs, or a resource.
func (h *handler) route(w http.ResponseWriter, r *http.Request) {
	if h.hub != nil && (r.URL.Path == HubPath || strings.HasPrefix(r.URL.Path, HubPath+"/")) {
		h.hub.ServeHTTP(w, r)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	p := r.URL.Path
	if h.trs != nil && (p == h.trs.Path() || strings.HasPrefix(p, h.trs.Path()+"/")) {
		h.trs.ServeHTTP(w, r)
		return
	}
	if p == "/"+layout.SourceDescriptionName || p == "/"+layout.SourceDescriptionName+sign.Suffix {
		h.serveOutput(w, r, p[1:]) // the Source Description, or its signature
		return
	}
	if p == h.dumpPath {
		h.serveIndex(w, r)
		return
	}
	if name, ok := strings.CutPrefix(p, h.dumpPath); ok && !strings.Contains(name, "/") && layout.IsOutput(name) {
		h.serveOutput(w, r, name)
		return
	}
	if rel, ok := strings.CutPrefix(p, h.basePath); ok && h.res != nil {
		h.serveResource(w, r, rel)
		return
	}
	http.NotFound(w, r)
}
