package trs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"sort"
	"strconv"

	"github.com/rsdump/rsdump/internal/httpc"
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
	HTTP *http.Client // nil: httpc.Default()
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
// the response came from (after redirects).
func (c *Client) get(ctx context.Context, loc string) ([]Triple, string, http.Header, error) {
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
	body, err := io.ReadAll(rc)
	if err != nil {
		return nil, final, resp.Header, fmt.Errorf("%s: %w", final, err)
	}
	ts, err := ParseTurtle(body, final)
	if err != nil {
		return nil, final, resp.Header, fmt.Errorf("%s: %w", final, err)
	}
	return ts, final, resp.Header, nil
}

// rdfGraph indexes triples by subject and predicate.
type rdfGraph map[Term]map[string][]Term

func index(ts []Triple) rdfGraph {
	g := rdfGraph{}
	for _, t := range ts {
		if g[t.S] == nil {
			g[t.S] = map[string][]Term{}
		}
		g[t.S][t.P.Value] = append(g[t.S][t.P.Value], t.O)
	}
	return g
}

func (g rdfGraph) typed(class string) []Term {
	var out []Term
	for s, ps := range g {
		for _, o := range ps[rdfType] {
			if o == iri(class) {
				out = append(out, s)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Value < out[j].Value })
	return out
}

// one is the single object of s p, which must be there exactly once.
func (g rdfGraph) one(s Term, p string) (Term, error) {
	os := g[s][p]
	if len(os) != 1 {
		return Term{}, fmt.Errorf("%s has %d %s, the specification allows exactly one", s, len(os), p)
	}
	return os[0], nil
}

// Read reads the Tracked Resource Set at loc.
func (c *Client) Read(ctx context.Context, loc string) (*Set, error) {
	ts, final, hdr, err := c.get(ctx, loc)
	if err != nil {
		return nil, err
	}
	g := index(ts)
	subj := iri(final)
	if g[subj] == nil {
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
	return &Set{URL: final, Base: base.Value, Log: log, Header: hdr}, nil
}

// Segment reads the Change Log segment at loc (a trs:previous).
func (c *Client) Segment(ctx context.Context, loc string) (Segment, error) {
	ts, final, _, err := c.get(ctx, loc)
	if err != nil {
		return Segment{}, err
	}
	g := index(ts)
	subj := iri(final)
	if g[subj] == nil {
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

// segment reads the events of the ChangeLog node cl.
func (g rdfGraph) segment(cl Term) (Segment, error) {
	var s Segment
	if prev := g[cl][trsPrevious]; len(prev) > 1 {
		return s, fmt.Errorf("%d trs:previous, at most one allowed", len(prev))
	} else if len(prev) == 1 && prev[0].Value != rdfNil {
		s.Previous = prev[0].Value
	}
	for _, e := range g[cl][trsChange] {
		if e.Kind != IRI {
			return s, fmt.Errorf("a Change Event that is a blank node (it must have a URI)")
		}
		ev := Event{URI: e.Value}
		types := 0
		for _, t := range g[e][rdfType] {
			if t == iri(Creation) || t == iri(Modification) || t == iri(Deletion) {
				ev.Type = t.Value
				types++
			}
		}
		if types != 1 {
			return s, fmt.Errorf("Change Event %s has %d types of trs:Creation, trs:Modification, trs:Deletion; exactly one is required", e.Value, types)
		}
		changed, err := g.one(e, trsChanged)
		if err != nil || changed.Kind != IRI {
			return s, fmt.Errorf("Change Event %s: trs:changed: %v", e.Value, errors.Join(err, errors.New("must be one IRI")))
		}
		ev.Changed = changed.Value
		order, err := g.one(e, trsOrder)
		if err != nil {
			return s, fmt.Errorf("Change Event %s: %w", e.Value, err)
		}
		if ev.Order, err = strconv.ParseInt(order.Value, 10, 64); err != nil || ev.Order < 0 {
			return s, fmt.Errorf("Change Event %s: trs:order %q is not a non-negative integer", e.Value, order.Value)
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

// maxPages bounds the pages of one Base a client follows: a server whose
// next links go round forever is stopped.
const maxPages = 1 << 20

// Base reads every page of the Base at loc (a redirect to its first page
// is followed), handing each to fn in turn. The cutoff event is the
// first page's; a first page without one is an error, as is a next link
// back to a page read.
func (c *Client) Base(ctx context.Context, loc string, fn func(BasePage) error) (cutoff string, err error) {
	seen := map[string]bool{}
	for next, n := loc, 0; next != ""; n++ {
		if seen[next] || n >= maxPages {
			return "", fmt.Errorf("%s: the Base's next links go round (page %s again)", loc, next)
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
	ts, final, hdr, err := c.get(ctx, loc)
	if err != nil {
		return BasePage{}, err
	}
	g := index(ts)
	p := BasePage{URL: final}
	container := iri(base)
	if g[container] == nil {
		cs := g.typed(ldpDirectContainer)
		if len(cs) != 1 {
			return p, fmt.Errorf("%s: %d ldp:DirectContainer on a page of the Base %s", final, len(cs), base)
		}
		container = cs[0]
	}
	rel, mr := ldpMember, container
	if r := g[container][ldpHasMemberRelation]; len(r) == 1 {
		rel = r[0].Value
	}
	if m := g[container][ldpMembershipResource]; len(m) == 1 {
		mr = m[0]
	}
	for _, m := range g[mr][rel] {
		if m.Kind != IRI {
			return p, fmt.Errorf("%s: a member that is not an IRI", final)
		}
		p.Members = append(p.Members, m.Value)
	}
	if co := g[container][trsCutoffEvent]; len(co) > 1 {
		return p, fmt.Errorf("%s: %d trs:cutoffEvent, exactly one allowed", final, len(co))
	} else if len(co) == 1 {
		p.Cutoff = co[0].Value
	}
	for _, l := range httpheader.ParseLinks(hdr.Values("Link"), final) {
		if l.Has("next") {
			p.Next = l.URL
		}
	}
	if p.Next == "" {
		for s, ps := range g {
			if len(ps[ldpPageOf]) > 0 || s == iri(final) {
				if nx := ps[ldpNextPage]; len(nx) == 1 && nx[0].Value != rdfNil {
					p.Next = nx[0].Value
				}
			}
		}
	}
	return p, nil
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
// trs:previous answers 404) before point, the error is ErrLost. Memory
// holds one segment.
func (c *Client) Walk(ctx context.Context, set *Set, point string, fn func(Event) error) (at int64, err error) {
	seg := set.Log
	seen := map[string]bool{}
	for {
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
