package trs

import (
	"context"
	"errors"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/rsdump/rsdump/layout"
	"github.com/rsdump/rsdump/resourcesync"
)

// TestNegotiation: Turtle without Accept or when preferred or tied, RDF/XML
// when preferred, 406 when neither is acceptable.
func TestNegotiation(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 3, Options{})
	f.generation()
	for _, c := range []struct{ accept, want string }{
		{"", "text/turtle"},
		{"*/*", "text/turtle"},
		{"text/turtle", "text/turtle"},
		{"application/rdf+xml", "application/rdf+xml"},
		{"application/rdf+xml, text/turtle", "text/turtle"},
		{"text/turtle;q=0.5, application/rdf+xml", "application/rdf+xml"},
		{"application/*", "application/rdf+xml"},
		{"text/*;q=0.9, application/rdf+xml;q=0.8", "text/turtle"},
		{"application/ld+json", ""},
		{"text/turtle;q=0", ""},
	} {
		resp, body := f.get("/trs", c.accept)
		ct := resp.Header.Get("Content-Type")
		switch {
		case c.want == "" && resp.StatusCode != http.StatusNotAcceptable:
			t.Errorf("Accept %q: %s %s, want 406", c.accept, resp.Status, ct)
		case c.want != "" && !strings.HasPrefix(ct, c.want):
			t.Errorf("Accept %q: %s, want %s", c.accept, ct, c.want)
		case c.want != "" && !strings.Contains(resp.Header.Get("Vary"), "Accept"):
			t.Errorf("Accept %q: no Vary: Accept", c.accept)
		case c.want == "application/rdf+xml" && !strings.HasPrefix(string(body), "<?xml"):
			t.Errorf("Accept %q: %s", c.accept, body)
		}
	}
}

// TestETags: every resource has a strong ETag of its bytes, a conditional
// GET of it answers 304, and the ETag of the Tracked Resource Set moves
// when the Change Log grows, as does that of its RDF/XML form apart.
func TestETags(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 6, Options{PageSize: 2, SegmentSize: 1})
	f.generation()
	f.generation()
	_, _, pages := f.members()
	for _, u := range append([]string{f.url("/trs"), f.url("/trs/changelog/1")}, pages...) {
		resp, _ := f.get(u, "")
		etag := resp.Header.Get("ETag")
		if !strings.HasPrefix(etag, `"`) || resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %s, ETag %q", u, resp.Status, etag)
		}
		if r, _ := f.get(u, "", "If-None-Match", etag); r.StatusCode != http.StatusNotModified {
			t.Errorf("%s If-None-Match its ETag: %s", u, r.Status)
		}
		if r, _ := f.get(u, "application/rdf+xml"); r.Header.Get("ETag") == etag {
			t.Errorf("%s: Turtle and RDF/XML share the ETag %s", u, etag)
		}
	}
	before, _ := f.get("/trs", "")
	f.generation()
	after, _ := f.get("/trs", "")
	if before.Header.Get("ETag") == after.Header.Get("ETag") {
		t.Errorf("the ETag did not change with the Change Log")
	}
	if r, _ := f.get("/trs", "", "If-None-Match", before.Header.Get("ETag")); r.StatusCode != http.StatusOK {
		t.Errorf("a stale ETag: %s", r.Status)
	}
}

// TestPaging: the Base redirects (303) to its first page; pages carry
// LDP paging's Link fields (first, next but on the last, type ldp:Page)
// and ldp:nextPage in the body; a page past the end, of another version,
// or malformed, is 404; the Base of an index's parts pages through every
// part.
func TestPaging(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 5, Options{PageSize: 2})
	req, _ := http.NewRequest(http.MethodGet, f.url("/trs/base"), nil)
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	first := resp.Header.Get("Location")
	if resp.StatusCode != http.StatusSeeOther || !strings.HasSuffix(first, "/1-0") {
		t.Fatalf("GET base: %s, Location %q", resp.Status, first)
	}
	members, cutoff, pages := f.members()
	if len(pages) != 3 || len(members) != 5 || cutoff != rdfNil {
		t.Fatalf("%d pages, %d members, cutoff %s", len(pages), len(members), cutoff)
	}
	for i, p := range pages {
		g, resp := f.graph(p)
		links := strings.Join(resp.Header.Values("Link"), ", ")
		if !strings.Contains(links, "<"+first+`>; rel="first"`) || !strings.Contains(links, `<http://www.w3.org/ns/ldp#Page>; rel="type"`) {
			t.Errorf("%s: Link %s", p, links)
		}
		next := g[iri(p)][ldpNextPage]
		if last := i == len(pages)-1; last != strings.Contains(next[0].Value, rdfNil) || last == strings.Contains(links, `rel="next"`) {
			t.Errorf("page %d of %d: ldp:nextPage %v, Link %s", i+1, len(pages), next, links)
		}
		if co := g[iri(f.url("/trs/base"))][trsCutoffEvent]; (i == 0) != (len(co) == 1) {
			t.Errorf("page %d: cutoff %v", i+1, co)
		}
	}
	version := strings.Split(strings.TrimPrefix(pages[0], f.url("/trs/base/")), "/")[0]
	for _, p := range []string{"/trs/base/" + version + "/1-9", "/trs/base/0000/1-0", "/trs/base/" + version + "/1-01", "/trs/base/" + version + "/2-0", "/trs/changelog/1", "/trs/x", "/trsx"} {
		if r, _ := f.get(p, ""); r.StatusCode != http.StatusNotFound {
			t.Errorf("%s: %s", p, r.Status)
		}
	}
	if r, _ := f.get("/trs", ""); r.Request.Method == "" {
		t.Fatal("no request")
	}
	req, _ = http.NewRequest(http.MethodPost, f.url("/trs"), nil)
	if r, err := http.DefaultClient.Do(req); err != nil || r.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST: %v %v", r.Status, err)
	}
}

// TestOutOfOrderChangeList: a Change List whose times go back is refused
// (trs:order would not increase with time), naming the entry.
func TestOutOfOrderChangeList(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 2, Options{})
	f.generation()
	cl := f.changeEntries()
	cl[0], cl[len(cl)-1] = cl[len(cl)-1], cl[0]
	fh, err := os.Create(filepath.Join(f.out, layout.ChangeListName))
	if err != nil {
		t.Fatal(err)
	}
	enc, _ := resourcesync.NewEncoder(fh, resourcesync.Header{Kind: resourcesync.URLSet, MD: resourcesync.MD{Capability: resourcesync.CapChangeList, From: f.at.Add(-2 * 3600e9)}})
	for _, u := range cl {
		enc.Encode(u)
	}
	enc.Close()
	fh.Close()
	resp, body := f.get("/trs", "")
	if resp.StatusCode != http.StatusInternalServerError || !strings.Contains(string(body), "entry 2") {
		t.Errorf("%s: %s", resp.Status, body)
	}
}

// turtleGrammarDoc uses the grammar a foreign server may write.
const turtleGrammarDoc = `@base <http://h/dir/> .
PREFIX ex: <http://ex/ns#>
@prefix : <http://default/> .
<a> ex:p "x\"y\u00e9"@en, 'z', """long
"quoted" text""", 12, -3.5, 1e3, true ; ex:q [ ex:r :s ] ; a ex:T .
_:b1 ex:list (1 <b>) .
ex:dotted.name ex:p ex:o. # comment
`

// TestTurtleParser reads the grammar a foreign server may write.
func TestTurtleParser(t *testing.T) {
	t.Parallel()
	doc := turtleGrammarDoc
	ts, err := ParseTurtle([]byte(doc), "http://ignored/")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, tr := range ts {
		got = append(got, tr.S.String()+" "+tr.P.String()+" "+tr.O.String())
	}
	all := strings.Join(got, "\n")
	for _, want := range []string{
		`<http://h/dir/a> <http://ex/ns#p> "x\"yé"@en`,
		`<http://h/dir/a> <http://ex/ns#p> "long\n\"quoted\" text"`,
		`<http://h/dir/a> <http://ex/ns#p> "12"^^<http://www.w3.org/2001/XMLSchema#integer>`,
		`<http://h/dir/a> <http://ex/ns#p> "-3.5"^^<http://www.w3.org/2001/XMLSchema#decimal>`,
		`<http://h/dir/a> <http://ex/ns#p> "1e3"^^<http://www.w3.org/2001/XMLSchema#double>`,
		`<http://h/dir/a> <http://www.w3.org/1999/02/22-rdf-syntax-ns#type> <http://ex/ns#T>`,
		`<http://default/s>`,
		`<http://www.w3.org/1999/02/22-rdf-syntax-ns#first> <http://h/dir/b>`,
		`<http://ex/ns#dotted.name> <http://ex/ns#p> <http://ex/ns#o>`,
	} {
		if !strings.Contains(all, want) {
			t.Errorf("missing %s in\n%s", want, all)
		}
	}
	if len(ts) != 16 {
		t.Errorf("%d triples:\n%s", len(ts), all)
	}
	for _, bad := range []string{`<a> <b> .`, `<a> <b> "x .`, `x:y <b> <c> .`, `<a> <b> <c>`, `<a b> <b> <c> .`} {
		if _, err := ParseTurtle([]byte(bad), ""); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

// TestSinceLost: a client whose sync point was truncated away is told
// ErrLost, both when the log ends before it and when the trs:previous it
// follows answers 404; one whose point is there gets the events after it,
// oldest first.
func TestSinceLost(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 6, Options{SegmentSize: 1, Keep: 1})
	f.generation()
	c := &Client{}
	ctx := context.Background()
	set, err := c.Read(ctx, f.url("/trs"))
	if err != nil {
		t.Fatal(err)
	}
	newest := set.Log.Events[0]
	if evs, err := since(ctx, c, set, newest.URI); err != nil || len(evs) != 0 {
		t.Errorf("Since the newest: %v %v", evs, err)
	}
	if _, err := since(ctx, c, set, "urn:gone"); !errors.Is(err, ErrLost) {
		t.Errorf("a point the log never had: %v", err)
	}
	// With segments of one event and keep 1, after another generation
	// the segment the old set links is truncated: 404.
	f.generation()
	stale := &Set{URL: set.URL, Log: Segment{Previous: f.url("/trs/changelog/1")}}
	if _, err := since(ctx, c, stale, newest.URI); !errors.Is(err, ErrLost) || !strings.Contains(err.Error(), "404") {
		t.Errorf("a truncated trs:previous: %v", err)
	}
	now, _ := c.Read(ctx, f.url("/trs"))
	evs, err := since(ctx, c, now, newest.URI)
	if !errors.Is(err, ErrLost) {
		t.Errorf("after truncation past it: %v %v", evs, err)
	}
}

// TestConcurrentRequestsAcrossPacks: requests in flight while pack writes
// new generations each get a whole answer of one view (200, or 404 for a
// segment a new view does not have), never a failure reading the spool
// of a view replaced meanwhile.
func TestConcurrentRequestsAcrossPacks(t *testing.T) {
	t.Parallel()
	f := newFixture(t, 6, Options{SegmentSize: 1, PageSize: 2})
	f.generation()
	done := make(chan struct{})
	errs := make(chan string, 100)
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; ; n++ {
				select {
				case <-done:
					return
				default:
				}
				p := []string{"/trs", "/trs/changelog/1", "/trs/changelog/2"}[(i+n)%3]
				resp, err := http.Get(f.url(p))
				if err != nil {
					errs <- err.Error()
					return
				}
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusNotFound {
					errs <- p + ": " + resp.Status
				}
			}
		}()
	}
	f.generation()
	f.generation()
	close(done)
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	if evs, _ := f.walk(); len(evs) != len(f.changeEntries()) {
		t.Errorf("%d events, %d changes", len(evs), len(f.changeEntries()))
	}
}

// TestPageNumberOverflow: a page or segment number no page has is 404,
// whatever k*PageSize overflows to (2^61 pages of 8 members start at
// member 2^64, which wraps to the first page's), and never a page.
func TestPageNumberOverflow(t *testing.T) {
	t.Parallel()
	for _, size := range []int{8, 1000} {
		f := newFixture(t, 5, Options{PageSize: size, SegmentSize: 2})
		f.generation()
		_, _, pages := f.members()
		version := strings.Split(strings.TrimPrefix(pages[0], f.url("/trs/base/")), "/")[0]
		for _, k := range []string{
			"2305843009213693952",  // 2^61: times 8 or 1000, a multiple of 2^64
			"9223372036854775807",  // the largest int64
			"9223372036854775808",  // past it
			"4611686018427387905",  // 2^62+1
			"18446744073709551616", // 2^64
			strconv.Itoa(math.MaxInt/size - 1),
			strconv.Itoa(math.MaxInt / size),
			"1",
		} {
			p := "/trs/base/" + version + "/1-" + k
			if r, body := f.get(p, ""); r.StatusCode != http.StatusNotFound || strings.Contains(string(body), "ldp:member") {
				t.Errorf("page size %d: %s: %s\n%s", size, p, r.Status, body)
			}
		}
		for _, k := range []string{"0", "9223372036854775807", "9223372036854775808", "-9223372036854775808", "4611686018427387905"} {
			if r, body := f.get("/trs/changelog/"+k, ""); r.StatusCode != http.StatusNotFound {
				t.Errorf("segment %s: %s\n%s", k, r.Status, body)
			}
		}
	}
}
