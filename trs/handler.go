// Package trs is the OSLC Tracked Resource Set 2.0 view of a Source that
// rsdump pack wrote, and a client of such a view. The server side derives
// everything from the ResourceSync documents, found through the
// Capability List as a Destination finds them: the Resource List is the
// Base (an ldp:DirectContainer, paged), the Change Lists are the Change
// Log (one Change Event per entry, trs:order its position across them,
// the newest segment inline in the Tracked Resource Set and older ones
// linked by trs:previous). Every resource is served as Turtle, and as
// RDF/XML to a client that prefers it.
package trs

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"mime"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rsdump/rsdump/internal/opt"
)

// Defaults of Options, and the most either size may be.
const (
	DefaultPageSize    = 1000
	DefaultSegmentSize = 1000
	MaxSize            = 1 << 20
)

// Options configure a Handler.
type Options struct {
	// Open opens a document of the directory by name. Required.
	Open OpenFunc
	// Path is the request path the Tracked Resource Set is mounted at
	// ("/trs", say); the Base and the Change Log segments are under it.
	Path string
	// URL is the absolute URL of the Tracked Resource Set for a request;
	// nil builds it from the request's host and Path.
	URL func(r *http.Request) string
	// Link, when set, is added to every response as a Link field (the
	// Source's Capability List as rel="resourcesync", say).
	Link func(r *http.Request) string
	// Keep truncates the Change Log to its newest Keep events (never
	// dropping the Base's cutoff event or a later one); 0 keeps all.
	Keep int
	// PageSize is the most members a Base page lists; SegmentSize the
	// most events a Change Log segment holds. Each is at most MaxSize.
	PageSize, SegmentSize int
}

// Handler serves the Tracked Resource Set: Path is the Tracked Resource
// Set, Path/base the Base (redirected to its first page),
// Path/base/VERSION/PART-K its pages and Path/changelog/K the older
// segments of the Change Log.
type Handler struct {
	opts Options
	src  source
	mu   sync.Mutex
	v    *view
}

// New returns the handler of the Tracked Resource Set of the documents
// opts.Open reads.
func New(opts Options) (*Handler, error) {
	if opts.Open == nil {
		return nil, fmt.Errorf("trs: no Open")
	}
	if opts.Keep < 0 {
		return nil, fmt.Errorf("trs: keep %d: must not be negative", opts.Keep)
	}
	opt.Default(&opts.PageSize, DefaultPageSize)
	opt.Default(&opts.SegmentSize, DefaultSegmentSize)
	opts.PageSize, opts.SegmentSize = min(opts.PageSize, MaxSize), min(opts.SegmentSize, MaxSize)
	opts.Path = "/" + strings.Trim(opts.Path, "/")
	return &Handler{opts: opts, src: source{open: opts.Open, keep: int64(opts.Keep), segment: int64(opts.SegmentSize)}}, nil
}

// Path is where the handler is mounted.
func (h *Handler) Path() string { return h.opts.Path }

// view is the view of the documents as they are now: the one computed
// last, unless a document changed since.
func (h *Handler) view(ctx context.Context) (*view, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	key, lists, changes, err := h.src.fingerprint(ctx)
	if err != nil {
		return nil, err
	}
	if h.v != nil && h.v.key == key && h.v.spool.acquire() {
		return h.v, nil
	}
	v, err := h.src.compute(ctx, key, lists, changes)
	if err != nil {
		return nil, err
	}
	if h.v != nil {
		h.v.spool.retire()
	}
	h.v = v
	v.spool.acquire()
	return v, nil
}

// Close releases the view's spool of events.
func (h *Handler) Close() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.v != nil {
		h.v.spool.retire()
		h.v = nil
	}
	return nil
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	rest, ok := strings.CutPrefix(r.URL.Path, h.opts.Path)
	if !ok || rest != "" && rest[0] != '/' {
		http.NotFound(w, r)
		return
	}
	v, err := h.view(r.Context())
	if err != nil {
		http.Error(w, "the Source's documents cannot be read: "+err.Error(), http.StatusInternalServerError)
		return
	}
	defer v.spool.release()
	self := h.url(r)
	if h.opts.Link != nil {
		if l := h.opts.Link(r); l != "" {
			w.Header().Add("Link", l)
		}
	}
	switch parts := strings.Split(strings.Trim(rest, "/"), "/"); {
	case rest == "":
		h.serveTRS(w, r, v, self)
	case parts[0] == "base" && len(parts) == 1:
		http.Redirect(w, r, h.pageURL(self, v, 1, 0), http.StatusSeeOther)
	case parts[0] == "base" && len(parts) == 3 && parts[1] == v.version:
		part, k, ok := parsePage(parts[2])
		if !ok || part > len(v.lists) && !(part == 1 && len(v.lists) == 0) || k > h.lastPage() {
			http.NotFound(w, r)
			return
		}
		h.servePage(w, r, v, self, part, k)
	case parts[0] == "changelog" && len(parts) == 2:
		k, err := strconv.ParseInt(parts[1], 10, 64)
		if err != nil || strconv.FormatInt(k, 10) != parts[1] || k < h.segment(v.horizon) || k >= h.segment(v.events) {
			http.NotFound(w, r) // truncated, not yet written, or not a segment
			return
		}
		h.serveSegment(w, r, v, self, k)
	default:
		http.NotFound(w, r)
	}
}

func (h *Handler) url(r *http.Request) string {
	if h.opts.URL != nil {
		return h.opts.URL(r)
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return (&url.URL{Scheme: scheme, Host: r.Host, Path: h.opts.Path}).String()
}

func baseURL(self string) string { return self + "/base" }

func (h *Handler) pageURL(self string, v *view, part, k int) string {
	return fmt.Sprintf("%s/base/%s/%d-%d", self, v.version, part, k)
}

func segmentURL(self string, k int64) string { return fmt.Sprintf("%s/changelog/%d", self, k) }

func parsePage(s string) (part, k int, ok bool) {
	a, b, found := strings.Cut(s, "-")
	p, err1 := strconv.Atoi(a)
	n, err2 := strconv.Atoi(b)
	if !found || err1 != nil || err2 != nil || p < 1 || n < 0 || strconv.Itoa(p) != a || strconv.Itoa(n) != b {
		return 0, 0, false
	}
	return p, n, true
}

// lastPage is the highest page number whose first member's index,
// and the next page's, an int holds: past it, k*PageSize would overflow
// to some other page's, which must not be served under this number.
func (h *Handler) lastPage() int { return (math.MaxInt-1)/h.opts.PageSize - 1 }

// segment is the Change Log segment an order falls in, counting from 1;
// 0 for order 0 (an empty Change Log).
func (h *Handler) segment(order int64) int64 {
	if order <= 0 {
		return 0
	}
	return (order-1)/int64(h.opts.SegmentSize) + 1
}

// serveTRS answers the Tracked Resource Set: its Base, and the Change
// Log's newest segment inline (a blank node), events and all.
func (h *Handler) serveTRS(w http.ResponseWriter, r *http.Request, v *view, self string) {
	g := newGraph()
	s := iri(self)
	g.add(s, iri(rdfType), iri(trsTrackedResourceSet))
	g.add(s, iri(trsBase), iri(baseURL(self)))
	cl := blank("changeLog")
	g.add(s, iri(trsChangeLog), cl)
	if err := h.addSegment(g, v, self, cl, h.segment(v.events)); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	h.write(w, r, g)
}

func (h *Handler) serveSegment(w http.ResponseWriter, r *http.Request, v *view, self string, k int64) {
	g := newGraph()
	if err := h.addSegment(g, v, self, iri(segmentURL(self, k)), k); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	h.write(w, r, g)
}

// addSegment adds segment k of the Change Log as the ChangeLog node cl:
// its events kept (at or after the horizon), newest first, and a
// trs:previous link to the segment before, unless truncation dropped it.
func (h *Handler) addSegment(g *graph, v *view, self string, cl Term, k int64) error {
	g.add(cl, iri(rdfType), iri(trsChangeLogClass))
	if k == 0 {
		return nil
	}
	size := int64(h.opts.SegmentSize)
	lo, hi := max((k-1)*size+1, v.horizon), k*size
	all, err := v.spool.segment(k)
	if err != nil {
		return err
	}
	var evs []event
	for _, e := range all {
		if e.order >= lo && e.order <= hi {
			evs = append(evs, e)
		}
	}
	sort.Slice(evs, func(i, j int) bool { return evs[i].order > evs[j].order })
	for _, e := range evs {
		g.add(cl, iri(trsChange), iri(e.uri()))
	}
	if k-1 >= h.segment(v.horizon) && k > 1 {
		g.add(cl, iri(trsPrevious), iri(segmentURL(self, k-1)))
	}
	for _, e := range evs {
		ev := iri(e.uri())
		g.add(ev, iri(rdfType), iri(e.kind))
		g.add(ev, iri(trsChanged), iri(e.changed))
		g.add(ev, iri(trsOrder), integer(e.order))
	}
	return nil
}

// servePage answers page k of part (1-based) of the Base: the container's
// triples (the cutoff event on the first page), its members, and the
// page's own, with LDP paging's Link fields.
func (h *Handler) servePage(w http.ResponseWriter, r *http.Request, v *view, self string, part, k int) {
	g := newGraph()
	base := iri(baseURL(self))
	g.add(base, iri(rdfType), iri(ldpDirectContainer))
	g.add(base, iri(ldpMembershipResource), base)
	g.add(base, iri(ldpHasMemberRelation), iri(ldpMember))
	if part == 1 && k == 0 {
		g.add(base, iri(trsCutoffEvent), iri(v.cutoff.uri()))
	}
	size := h.opts.PageSize
	n, more := 0, false
	if len(v.lists) > 0 {
		err := h.src.members(r.Context(), v.lists[part-1], k*size, size+1, func(loc string) {
			if n == size {
				more = true
				return
			}
			g.add(base, iri(ldpMember), iri(loc))
			n++
		})
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
	}
	if n == 0 && k > 0 {
		http.NotFound(w, r)
		return
	}
	next := ""
	switch {
	case more:
		next = h.pageURL(self, v, part, k+1)
	case part < len(v.lists):
		next = h.pageURL(self, v, part+1, 0)
	}
	page := iri(h.pageURL(self, v, part, k))
	g.add(page, iri(rdfType), iri(ldpPage))
	g.add(page, iri(ldpPageOf), base)
	if next != "" {
		g.add(page, iri(ldpNextPage), iri(next))
	} else {
		g.add(page, iri(ldpNextPage), iri(rdfNil))
	}
	hdr := w.Header()
	hdr.Add("Link", fmt.Sprintf("<%s>; rel=\"first\"", h.pageURL(self, v, 1, 0)))
	if next != "" {
		hdr.Add("Link", fmt.Sprintf("<%s>; rel=\"next\"", next))
	}
	hdr.Add("Link", fmt.Sprintf("<%s>; rel=\"type\"", ldpPage))
	h.write(w, r, g)
}

// write sends g in the representation the request prefers (Turtle
// unless it prefers RDF/XML; 406 when it accepts neither), with a strong
// ETag of the bytes, so that conditional requests are answered 304.
func (h *Handler) write(w http.ResponseWriter, r *http.Request, g *graph) {
	ct, ok := negotiate(r.Header.Values("Accept"))
	if !ok {
		http.Error(w, "406 not acceptable: this resource is text/turtle or application/rdf+xml", http.StatusNotAcceptable)
		return
	}
	var buf bytes.Buffer
	var err error
	if ct == mediaRDFXML {
		err = g.writeRDFXML(&buf)
		w.Header().Set("Content-Type", rdfXMLContentType)
	} else {
		err = g.writeTurtle(&buf)
		w.Header().Set("Content-Type", turtleContentType)
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	sum := sha256.Sum256(buf.Bytes())
	w.Header().Set("ETag", `"`+hex.EncodeToString(sum[:12])+`"`)
	w.Header().Add("Vary", "Accept")
	w.Header().Set("Cache-Control", "no-cache") // revalidate: the Change Log grows
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(buf.Bytes()))
}

// negotiate picks Turtle or RDF/XML by the Accept fields: the one with the
// higher quality, Turtle on a tie, and Turtle when there is no Accept.
func negotiate(accept []string) (string, bool) {
	if len(accept) == 0 {
		return mediaTurtle, true
	}
	q := map[string]float64{mediaTurtle: -1, mediaRDFXML: -1}
	spec := map[string]int{mediaTurtle: -1, mediaRDFXML: -1}
	for _, field := range accept {
		for _, item := range strings.Split(field, ",") {
			mt, params, err := mime.ParseMediaType(strings.TrimSpace(item))
			if err != nil {
				continue
			}
			weight := 1.0
			if s, ok := params["q"]; ok {
				if f, err := strconv.ParseFloat(s, 64); err == nil {
					weight = f
				}
			}
			for t := range q {
				level := -1
				switch {
				case mt == t:
					level = 2
				case mt == strings.Split(t, "/")[0]+"/*":
					level = 1
				case mt == "*/*":
					level = 0
				}
				if level > spec[t] {
					spec[t], q[t] = level, weight
				}
			}
		}
	}
	switch {
	case q[mediaTurtle] <= 0 && q[mediaRDFXML] <= 0:
		return "", false
	case q[mediaRDFXML] > q[mediaTurtle]:
		return mediaRDFXML, true
	}
	return mediaTurtle, true
}
