package trs

import (
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
)

// fuzzBase is the URL the fuzzed documents are read as coming from.
const fuzzBase = "http://127.0.0.1:8080/trs"

// fuzzSeeds are the documents the fuzz targets start from: the
// specification's examples, what this package's server writes (a Base
// page and a Change Log segment, small), the grammar test's document and
// the shapes of memoryDocs, small.
func fuzzSeeds() []string {
	var seeds []string
	for _, d := range specDocs {
		seeds = append(seeds, d)
	}
	page := newGraph()
	b := iri(fuzzBase + "/base")
	page.add(b, iri(rdfType), iri(ldpDirectContainer))
	page.add(b, iri(trsCutoffEvent), iri(rdfNil))
	page.add(b, iri(ldpMember), iri("http://127.0.0.1:8080/data/a.txt"))
	page.add(b, iri(ldpMember), iri("http://127.0.0.1:8080/data/b c.txt"))
	p := iri(fuzzBase + "/base/v/1-0")
	page.add(p, iri(rdfType), iri(ldpPage))
	page.add(p, iri(ldpPageOf), b)
	page.add(p, iri(ldpNextPage), iri(fuzzBase+"/base/v/1-1"))
	seg := newGraph()
	cl := iri(fuzzBase)
	seg.add(cl, iri(rdfType), iri(trsChangeLogClass))
	seg.add(cl, iri(trsPrevious), iri(fuzzBase+"/changelog/1"))
	e := event{order: 7, kind: Deletion, change: "deleted", changed: "http://127.0.0.1:8080/data/a.txt", when: time.Unix(1e9, 0)}
	seg.add(cl, iri(trsChange), iri(e.uri()))
	seg.add(iri(e.uri()), iri(rdfType), iri(e.kind))
	seg.add(iri(e.uri()), iri(trsChanged), iri(e.changed))
	seg.add(iri(e.uri()), iri(trsOrder), integer(e.order))
	seeds = append(seeds, turtleOf(page), turtleOf(seg), turtleGrammarDoc,
		"<a> <b> [], [ <p> _:x ], ( 1 ( 2.5 ) \"s\"@en ) .",
		"@prefix p: <http://127.0.0.1/long/> . p:a p:b p:c, p:d.e .",
		"@base <http://127.0.0.1/x/> . <s1> <p> <o1>, <../o2>, '''a\n\"b''' .",
		strings.Repeat("(", MaxNesting+1), strings.Repeat("[ <p> ", MaxNesting+1))
	return seeds
}

// checkGraph is what any document the parser reads must hold to: its
// cost within its budget, every triple's terms printable, the triples
// as many as it parsed.
func checkGraph(t *testing.T, g *docGraph) {
	if g.cost > g.budget {
		t.Fatalf("cost %d over the budget %d", g.cost, g.budget)
	}
	n := g.added.n
	ts := g.Triples()
	if len(ts) != n {
		t.Fatalf("%d triples, %d parsed", len(ts), n)
	}
	for _, tr := range ts {
		if tr.S.Kind == Literal || tr.P.Kind != IRI {
			t.Fatalf("triple %v: a literal subject or a predicate that is not an IRI", tr)
		}
	}
}

// FuzzTurtle: no document crashes the parser or takes it past its
// budget; what it reads is well-formed, and ParseTurtle agrees.
func FuzzTurtle(f *testing.F) {
	for _, s := range fuzzSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		g, err := parseTurtle(doc, fuzzBase)
		if err != nil {
			if _, perr := ParseTurtle([]byte(doc), fuzzBase); perr == nil {
				t.Fatalf("parseTurtle fails (%v), ParseTurtle does not", err)
			}
			return
		}
		checkGraph(t, g)
		ts, err := ParseTurtle([]byte(doc), fuzzBase)
		if err != nil || len(ts) != g.added.n {
			t.Fatalf("ParseTurtle: %d triples, %v; parseTurtle %d", len(ts), err, g.added.n)
		}
	})
}

// FuzzChangeLog: the readers of a Tracked Resource Set, a Change Log
// segment and a Base page never crash, and what they return holds to
// the specification's rules they check.
func FuzzChangeLog(f *testing.F) {
	for _, s := range fuzzSeeds() {
		f.Add(s)
	}
	kinds := []string{Creation, Modification, Deletion}
	f.Fuzz(func(t *testing.T, doc string) {
		g, err := parseTurtle(doc, fuzzBase)
		if err != nil {
			return
		}
		checkEvents := func(s Segment) {
			for _, e := range s.Events {
				if !slices.Contains(kinds, e.Type) || e.Order < 0 || e.URI == "" {
					t.Fatalf("event %+v", e)
				}
			}
		}
		if set, err := readSet(g, fuzzBase, http.Header{}); err == nil {
			checkEvents(set.Log)
		}
		if s, err := readSegment(g, fuzzBase); err == nil {
			checkEvents(s)
		}
		hdr := http.Header{"Link": {"<" + fuzzBase + "/next>; rel=\"next\""}}
		if p, err := readPage(g, hdr, fuzzBase+"/base", fuzzBase); err == nil && p.Next != fuzzBase+"/next" {
			t.Fatalf("next %q, the Link header says %s/next", p.Next, fuzzBase)
		}
	})
}

// TestNesting: nesting up to MaxNesting is read; one deeper, however
// deep, is an error saying so, not a crash of the goroutine's stack.
func TestNesting(t *testing.T) {
	t.Parallel()
	for _, open := range []string{"(", "[ <p> "} {
		inner, close := map[string]string{"(": "", "[ <p> ": "<o>"}[open], map[string]string{"(": ")", "[ <p> ": "]"}[open]
		ok := "<s> <p> " + strings.Repeat(open, MaxNesting) + inner + strings.Repeat(close, MaxNesting) + " ."
		if _, err := parseTurtle(ok, fuzzBase); err != nil {
			t.Errorf("%q nested %d deep: %v", open, MaxNesting, err)
		}
		for _, depth := range []int{MaxNesting + 1, 4 << 20} {
			_, err := parseTurtle("<s> <p> "+strings.Repeat(open, depth), fuzzBase)
			if err == nil || !strings.Contains(err.Error(), "nested deeper than 64") {
				t.Errorf("%q nested %d deep: %v, want the nesting refused", open, depth, err)
			}
		}
	}
}
