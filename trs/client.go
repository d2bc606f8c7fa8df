package trs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rsdump/rsdump/internal/httpc"
	"github.com/rsdump/rsdump/internal/opt"
	"github.com/rsdump/rsdump/metalink/httpheader"
)

// Event is a Change Event as a client reads it.
type Event struct {
	URI     string `json:"uri"`
	Type    string `json:"type"` // Creation, Modification or Deletion
	Changed string `json:"changed"`
	Order   int64  `json:"order"`
}

// Set is a Tracked Resource Set as read: its Base and the Change Log's
// segment inline in it.
type Set struct {
	URL    string
	Base   string
	Log    Segment
	Header http.Header // the response's, for its Link fields
}

// Segment is one segment of a Change Log: its events (in the order the
// server gave them) and the segment before it, if any.
type Segment struct {
	Events   []Event
	Previous string
}

// Client reads a Tracked Resource Set over HTTP, as Turtle.
type Client struct {
	HTTP   *http.Client // nil: httpc.Default()
	Limits Limits
}

// Limits bound the walks of a Client through chains of documents a
// server links, which a server may make endless, or lead round, or keep
// from ever reaching the point sought: a walk stopped by one ends with
// an error wrapping ErrWalkBound. Zero fields take the defaults.
type Limits struct {
	// Segments bounds the Change Log segments one Walk reads, the
	// Tracked Resource Set's own included. Default DefaultSegments.
	Segments int
	// Pages bounds the pages of the Base one Base reads. Default
	// DefaultPages.
	Pages int
	// Time bounds one Walk or one Base, whatever each request takes.
	// Default DefaultWalkTime.
	Time time.Duration
}

// Defaults of Limits.
const (
	DefaultSegments = 10_000    // 10 million events, at this package's server's 1,000 a segment
	DefaultPages    = 100_000   // 100 million members, at 1,000 a page
	DefaultWalkTime = time.Hour // what one walk may take
)

// ErrWalkBound is a walk stopped by a bound of Limits.
var ErrWalkBound = errors.New("stopped at a bound of the walk")

func (l Limits) withDefaults() Limits {
	opt.Default(&l.Segments, DefaultSegments)
	opt.Default(&l.Pages, DefaultPages)
	opt.Default(&l.Time, DefaultWalkTime)
	return l
}

// walkContext is ctx bounded by Limits.Time, and the error a walk whose
// time ran out returns: err as it is when ctx itself ended.
func (c *Client) walkContext(ctx context.Context) (context.Context, context.CancelFunc, func(what string, err error) error) {
	limit := c.Limits.withDefaults().Time
	wctx, cancel := context.WithTimeout(ctx, limit)
	timedOut := func(what string, err error) error {
		if err == nil || ctx.Err() != nil || wctx.Err() == nil {
			return err
		}
		return fmt.Errorf("%s took more than %s (Limits.Time): %w", what, limit, ErrWalkBound)
	}
	return wctx, cancel, timedOut
}

// ErrNotTRS is a response that is not a Tracked Resource Set.
var ErrNotTRS = errors.New("not a Tracked Resource Set")

// IsMediaType says whether a Content-Type is one a Tracked Resource Set
// is served as (Turtle or RDF/XML).
func IsMediaType(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	return err == nil && (mt == mediaTurtle || mt == mediaRDFXML)
}

// get fetches loc as Turtle and parses it, relative IRIs against the URL
// the response came from (after redirects). The body is read into the
// string the parser holds substrings of, sized by Content-Length when
// the server gives one.
func (c *Client) get(ctx context.Context, loc string) (*docGraph, string, http.Header, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, loc, nil)
	if err != nil {
		return nil, "", nil, fmt.Errorf("%s: %w", loc, err)
	}
	req.Header.Set("Accept", mediaTurtle)
	client := c.HTTP
	if client == nil {
		client = httpc.Default()
	}
	resp, rc, err := httpc.DoRetry(client, req, maxDocument)
	if err != nil {
		return nil, "", nil, err
	}
	defer rc.Close()
	final := loc
	if resp.Request != nil && resp.Request.URL != nil {
		final = resp.Request.URL.String()
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != mediaTurtle {
		return nil, final, resp.Header, fmt.Errorf("%s: %w: Content-Type %q, not text/turtle", final, ErrNotTRS, resp.Header.Get("Content-Type"))
	}
	var body strings.Builder
	if n := resp.ContentLength; n > 0 && n <= maxDocument {
		body.Grow(int(n))
	}
	if _, err := io.Copy(&body, rc); err != nil {
		return nil, final, resp.Header, fmt.Errorf("%s: %w", final, err)
	}
	g, err := parseTurtle(body.String(), final)
	if err != nil {
		return nil, final, resp.Header, fmt.Errorf("%s: %w", final, err)
	}
	return g, final, resp.Header, nil
}

// Read reads the Tracked Resource Set at loc.
func (c *Client) Read(ctx context.Context, loc string) (*Set, error) {
	g, final, hdr, err := c.get(ctx, loc)
	if err != nil {
		return nil, err
	}
	return readSet(g, final, hdr)
}

// readSet reads the Tracked Resource Set of the document at final.
func readSet(g *docGraph, final string, hdr http.Header) (*Set, error) {
	subj := g.node(final)
	if !g.has(subj) {
		sets := g.typed(trsTrackedResourceSet)
		if len(sets) != 1 {
			return nil, fmt.Errorf("%s: %w: %d resources of type trs:TrackedResourceSet", final, ErrNotTRS, len(sets))
		}
		subj = sets[0]
	}
	base, err := g.one(subj, trsBase)
	if err != nil {
		return nil, fmt.Errorf("%s: %w: %v", final, ErrNotTRS, err)
	}
	cl, err := g.one(subj, trsChangeLog)
	if err != nil {
		return nil, fmt.Errorf("%s: %w: %v", final, ErrNotTRS, err)
	}
	log, err := g.segment(cl)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", final, err)
	}
	return &Set{URL: final, Base: strings.Clone(g.value(base)), Log: log, Header: hdr}, nil
}

// Segment reads the Change Log segment at loc (a trs:previous).
func (c *Client) Segment(ctx context.Context, loc string) (Segment, error) {
	g, final, _, err := c.get(ctx, loc)
	if err != nil {
		return Segment{}, err
	}
	return readSegment(g, final)
}

// readSegment reads the Change Log segment of the document at final.
func readSegment(g *docGraph, final string) (Segment, error) {
	subj := g.node(final)
	if !g.has(subj) {
		logs := g.typed(trsChangeLogClass)
		if len(logs) != 1 {
			return Segment{}, fmt.Errorf("%s: %d resources of type trs:ChangeLog", final, len(logs))
		}
		subj = logs[0]
	}
	s, err := g.segment(subj)
	if err != nil {
		return s, fmt.Errorf("%s: %w", final, err)
	}
	return s, nil
}

// segment reads the events of the ChangeLog node cl. The strings it
// returns are copies: a substring of the document would keep all of it
// in memory for as long as the caller keeps an event.
func (g *docGraph) segment(cl node) (Segment, error) {
	var s Segment
	if prev := g.objects(cl, trsPrevious); len(prev) > 1 {
		return s, fmt.Errorf("%d trs:previous, at most one allowed", len(prev))
	} else if len(prev) == 1 && g.value(prev[0]) != rdfNil {
		s.Previous = strings.Clone(g.value(prev[0]))
	}
	kinds := []string{Creation, Modification, Deletion}
	for _, e := range g.objects(cl, trsChange) {
		if !g.isIRI(e) {
			return s, fmt.Errorf("a Change Event that is a blank node (it must have a URI)")
		}
		ev := Event{URI: strings.Clone(g.value(e))}
		types := 0
		for _, t := range g.objects(e, rdfType) {
			if i := slices.Index(kinds, g.value(t)); i >= 0 && g.isIRI(t) {
				ev.Type = kinds[i]
				types++
			}
		}
		if types != 1 {
			return s, fmt.Errorf("Change Event %s has %d types of trs:Creation, trs:Modification, trs:Deletion; exactly one is required", ev.URI, types)
		}
		changed, err := g.one(e, trsChanged)
		if err != nil || !g.isIRI(changed) {
			return s, fmt.Errorf("Change Event %s: trs:changed: %v", ev.URI, errors.Join(err, errors.New("must be one IRI")))
		}
		ev.Changed = strings.Clone(g.value(changed))
		order, err := g.one(e, trsOrder)
		if err != nil {
			return s, fmt.Errorf("Change Event %s: %w", ev.URI, err)
		}
		if ev.Order, err = strconv.ParseInt(g.value(order), 10, 64); err != nil || ev.Order < 0 {
			return s, fmt.Errorf("Change Event %s: trs:order %q is not a non-negative integer", ev.URI, g.value(order))
		}
		s.Events = append(s.Events, ev)
	}
	return s, nil
}

// BasePage is one page of a Base.
type BasePage struct {
	URL     string
	Members []string
	Cutoff  string // the trs:cutoffEvent, when the page gives it (the first must)
	Next    string
}

// Base reads every page of the Base at loc (a redirect to its first page
// is followed), handing each to fn in turn. The cutoff event is the
// first page's; a first page without one is an error, as is a next link
// back to a page read, and a Base whose pages go on past Limits.Pages or
// Limits.Time (ErrWalkBound).
func (c *Client) Base(ctx context.Context, loc string, fn func(BasePage) error) (cutoff string, err error) {
	ctx, cancel, timedOut := c.walkContext(ctx)
	defer cancel()
	cutoff, err = c.base(ctx, loc, fn)
	return cutoff, timedOut(loc+": reading the Base", err)
}

func (c *Client) base(ctx context.Context, loc string, fn func(BasePage) error) (cutoff string, err error) {
	maxPages := c.Limits.withDefaults().Pages
	seen := map[string]bool{}
	for next, n := loc, 0; next != ""; n++ {
		switch {
		case seen[next]:
			return "", fmt.Errorf("%s: the Base's next links go round (page %s again)", loc, next)
		case n >= maxPages:
			return "", fmt.Errorf("%s: the Base's next links go on past %d pages (Limits.Pages): %w", loc, maxPages, ErrWalkBound)
		}
		seen[next] = true
		p, err := c.page(ctx, loc, next)
		if err != nil {
			return "", err
		}
		if n == 0 {
			if p.Cutoff == "" {
				return "", fmt.Errorf("%s: the first page of the Base has no trs:cutoffEvent", p.URL)
			}
			cutoff = p.Cutoff
		}
		if err := fn(p); err != nil {
			return "", err
		}
		next = p.Next
	}
	return cutoff, nil
}

func (c *Client) page(ctx context.Context, base, loc string) (BasePage, error) {
	g, final, hdr, err := c.get(ctx, loc)
	if err != nil {
		return BasePage{}, err
	}
	return readPage(g, hdr, base, final)
}

// readPage reads the document at final as a page of the Base at base.
// Its members are copies of the document's strings, as segment's are.
func readPage(g *docGraph, hdr http.Header, base, final string) (BasePage, error) {
	p := BasePage{URL: final}
	container := g.node(base)
	if !g.has(container) {
		cs := g.typed(ldpDirectContainer)
		if len(cs) != 1 {
			return p, fmt.Errorf("%s: %d ldp:DirectContainer on a page of the Base %s", final, len(cs), base)
		}
		container = cs[0]
	}
	rel, mr := ldpMember, container
	if r := g.objects(container, ldpHasMemberRelation); len(r) == 1 {
		rel = g.value(r[0])
	}
	if m := g.objects(container, ldpMembershipResource); len(m) == 1 {
		mr = m[0]
	}
	members := g.objects(mr, rel)
	p.Members = make([]string, 0, len(members))
	for _, m := range members {
		if !g.isIRI(m) {
			return p, fmt.Errorf("%s: a member that is not an IRI", final)
		}
		p.Members = append(p.Members, strings.Clone(g.value(m)))
	}
	if co := g.objects(container, trsCutoffEvent); len(co) > 1 {
		return p, fmt.Errorf("%s: %d trs:cutoffEvent, exactly one allowed", final, len(co))
	} else if len(co) == 1 {
		p.Cutoff = strings.Clone(g.value(co[0]))
	}
	for _, l := range httpheader.ParseLinks(hdr.Values("Link"), final) {
		if l.Has("next") {
			p.Next = l.URL
		}
	}
	if p.Next == "" {
		p.Next = strings.Clone(g.nextPage(final))
	}
	return p, nil
}

// nextPage is the ldp:nextPage of the page at final, or of a subject
// that is an ldp:pageOf something; "" when there is none, or rdf:nil.
func (g *docGraph) nextPage(final string) string {
	self, pageOf, next := g.node(final), g.node(ldpPageOf), g.node(ldpNextPage)
	if next == noNode {
		return ""
	}
	out := ""
	g.sort()
	for _, t := range g.triples {
		if t.p != next || t.s != self && (pageOf == noNode || len(g.span(t.s, pageOf)) == 0) {
			continue
		}
		if nx := g.span(t.s, next); len(nx) == 1 && g.value(nx[0].o) != rdfNil {
			out = g.value(nx[0].o)
		}
	}
	return out
}

// ErrLost is a sync point the Change Log no longer holds: it was
// truncated past it, or the server rolled back. The client must rebase.
var ErrLost = errors.New("the sync point is not in the Change Log")

// Walk walks the Change Log of set from its newest segment back to the
// event point, handing fn every other event of the segments it reads, a
// segment at a time in the order the server lists them, and returns the
// order of point: the events after it are those fn was handed with a
// greater order (events need not be listed in order, within a segment or
// across them). point rdf:nil (the Base's cutoff at the start of time)
// takes the whole log, its order -1. When the log ends (or a
// trs:previous answers 404) before point, the error is ErrLost; when its
// trs:previous links lead round, or go on past Limits.Segments or
// Limits.Time before point, the walk stops with an error (ErrWalkBound
// for a bound). Memory holds one segment.
func (c *Client) Walk(ctx context.Context, set *Set, point string, fn func(Event) error) (at int64, err error) {
	ctx, cancel, timedOut := c.walkContext(ctx)
	defer cancel()
	at, err = c.walk(ctx, set, point, fn)
	return at, timedOut(set.URL+": walking the Change Log back to "+point, err)
}

func (c *Client) walk(ctx context.Context, set *Set, point string, fn func(Event) error) (at int64, err error) {
	maxSegments := c.Limits.withDefaults().Segments
	seg := set.Log
	seen := map[string]bool{}
	for n := 1; ; n++ {
		at = -1
		found := false
		for _, e := range seg.Events {
			if e.URI == point {
				found, at = true, e.Order
				continue
			}
			if err := fn(e); err != nil {
				return 0, err
			}
		}
		if found {
			return at, nil
		}
		if seg.Previous == "" {
			if point == rdfNil {
				return -1, nil
			}
			return 0, fmt.Errorf("%s: %w (%s)", set.URL, ErrLost, point)
		}
		if seen[seg.Previous] {
			return 0, fmt.Errorf("%s: the Change Log's trs:previous links go round (%s)", set.URL, seg.Previous)
		}
		if n >= maxSegments {
			return 0, fmt.Errorf("%s: the Change Log's trs:previous links go on past %d segments without reaching %s (Limits.Segments): %w", set.URL, maxSegments, point, ErrWalkBound)
		}
		seen[seg.Previous] = true
		prev, err := c.Segment(ctx, seg.Previous)
		var se *httpc.StatusError
		if errors.As(err, &se) && (se.Code == http.StatusNotFound || se.Code == http.StatusGone) {
			return 0, fmt.Errorf("%s: %w (%s; %s answers %s)", set.URL, ErrLost, point, seg.Previous, se.Status)
		}
		if err != nil {
			return 0, err
		}
		seg = prev
	}
}

// NilEvent is the cutoff of a Base that enumerates the Resource Set at
// the start of time.
const NilEvent = rdfNil
