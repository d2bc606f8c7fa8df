package trs

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// page is one resource of the Tracked Resource Set as served, in one
// representation.
type page struct {
	url, format string // format: "turtle" or "rdfxml"
	file        string
	body        []byte
}

// allPages fetches every resource of f's Tracked Resource Set (the set,
// each Base page, each Change Log segment) as Turtle and as RDF/XML into
// dir.
func allPages(t *testing.T, f *fixture, dir string) []page {
	t.Helper()
	_, _, bases := f.members()
	_, segs := f.walk()
	var out []page
	for i, u := range append(append([]string{}, segs...), bases...) {
		for _, rep := range []struct{ format, accept string }{{"turtle", "text/turtle"}, {"rdfxml", "application/rdf+xml"}} {
			resp, body := f.get(u, rep.accept)
			if resp.StatusCode != 200 {
				t.Fatalf("GET %s: %s", u, resp.Status)
			}
			p := page{url: u, format: rep.format, file: filepath.Join(dir, fmt.Sprintf("p%02d.%s", i, rep.format)), body: body}
			if err := os.WriteFile(p.file, body, 0o644); err != nil {
				t.Fatal(err)
			}
			out = append(out, p)
		}
	}
	return out
}

// truncatedFixture is a Source with four generations of changes, its
// Change Log truncated to 3 events, in pages of 4 members and segments
// of 2 events.
func truncatedFixture(t *testing.T) *fixture {
	f := newFixture(t, 10, Options{PageSize: 4, SegmentSize: 2, Keep: 3})
	for range 4 {
		f.generation()
	}
	return f
}

// TestRapperParsesEveryPage parses every page, Turtle and RDF/XML, with
// Debian's rapper (raptor2-utils), and checks that it reads the same
// triples from both as this package's own Turtle parser does.
func TestRapperParsesEveryPage(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("rapper"); err != nil {
		t.Skip("rapper (raptor2-utils) not installed")
	}
	f := truncatedFixture(t)
	pages := allPages(t, f, t.TempDir())
	if len(pages) < 8 {
		t.Fatalf("only %d pages", len(pages))
	}
	byURL := map[string][]string{}
	for _, p := range pages {
		out, err := exec.Command("rapper", "-q", "-i", p.format, "-o", "ntriples", p.file, p.url).Output()
		if err != nil {
			t.Errorf("rapper -i %s %s: %v\n%s", p.format, p.url, err, p.body)
			continue
		}
		lines := nonEmptyLines(string(out))
		if len(lines) == 0 {
			t.Errorf("rapper read no triple from %s (%s)", p.url, p.format)
		}
		if prev, ok := byURL[p.url]; ok && strings.Join(prev, "\n") != strings.Join(lines, "\n") {
			t.Errorf("%s: rapper reads other triples from Turtle and RDF/XML:\n%s\n---\n%s", p.url, strings.Join(prev, "\n"), strings.Join(lines, "\n"))
		}
		byURL[p.url] = lines
		if p.format == "turtle" {
			ts, err := ParseTurtle(p.body, p.url)
			if err != nil {
				t.Fatalf("%s: %v", p.url, err)
			}
			var ours []string
			for _, tr := range ts {
				ours = append(ours, ntriple(tr))
			}
			sort.Strings(ours)
			if strings.Join(ours, "\n") != strings.Join(lines, "\n") {
				t.Errorf("%s: rapper and ParseTurtle differ:\n%s\n---\n%s", p.url, strings.Join(lines, "\n"), strings.Join(ours, "\n"))
			}
		}
	}
}

func nonEmptyLines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	sort.Strings(out)
	return out
}

// ntriple writes a triple as rapper's N-Triples serializer does, for the
// terms the server writes.
func ntriple(t Triple) string {
	term := func(x Term) string {
		switch x.Kind {
		case Blank:
			return "_:" + strings.TrimPrefix(x.Value, "b_")
		case Literal:
			return x.String()
		}
		return "<" + x.Value + ">"
	}
	return term(t.S) + " " + term(t.P) + " " + term(t.O) + " ."
}

// lyoAsks are the Lyo TRS test suite's assertions on a Change Log, as
// SPARQL ASK queries that find a violation: each must answer false.
var lyoAsks = map[string]string{
	"every change has exactly one type of trs:Creation, trs:Modification, trs:Deletion": `
		ASK { { SELECT ?e (COUNT(?t) AS ?n) WHERE { ?log trs:change ?e .
			OPTIONAL { ?e rdf:type ?t . FILTER(?t IN (trs:Creation, trs:Modification, trs:Deletion)) } } GROUP BY ?e }
			FILTER(?n != 1) }`,
	"every change has exactly one trs:changed, a URI": `
		ASK { { SELECT ?e (COUNT(?c) AS ?n) (SUM(IF(isIRI(?c), 0, 1)) AS ?bad) WHERE { ?log trs:change ?e .
			OPTIONAL { ?e trs:changed ?c } } GROUP BY ?e }
			FILTER(?n != 1 || ?bad != 0) }`,
	"every change has one trs:order, a non-negative integer": `
		ASK { { SELECT ?e (COUNT(?o) AS ?n) (SUM(IF(datatype(?o) = xsd:integer && ?o >= 0, 0, 1)) AS ?bad) WHERE { ?log trs:change ?e .
			OPTIONAL { ?e trs:order ?o } } GROUP BY ?e }
			FILTER(?n != 1 || ?bad != 0) }`,
	"every change is a URI, not a blank node": `
		ASK { ?log trs:change ?e . FILTER(!isIRI(?e)) }`,
}

// rdflibScript parses each file with rdflib (Turtle or RDF/XML by its
// extension), and answers, per file, whether its two representations are
// isomorphic, how many trs:change it has, and each ASK.
const rdflibScript = `
import json, sys
from rdflib import Graph
from rdflib.compare import isomorphic
asks = json.loads(sys.argv[1])
out = {}
for path, base in zip(sys.argv[2::2], sys.argv[3::2]):
    g = Graph()
    g.parse(path, format="turtle" if path.endswith(".turtle") else "xml", publicID=base)
    r = {"triples": len(g), "changes": len(list(g.query("PREFIX trs: <http://open-services.net/ns/core/trs#> SELECT ?e WHERE { ?l trs:change ?e }")))}
    for name, q in asks.items():
        r[name] = bool(g.query("PREFIX trs: <http://open-services.net/ns/core/trs#> PREFIX rdf: <http://www.w3.org/1999/02/22-rdf-syntax-ns#> PREFIX xsd: <http://www.w3.org/2001/XMLSchema#> " + q).askAnswer)
    if path.endswith(".rdfxml"):
        t = Graph()
        t.parse(path[:-len(".rdfxml")] + ".turtle", format="turtle", publicID=base)
        r["isomorphic"] = isomorphic(g, t)
    out[path] = r
print(json.dumps(out))
`

// runRDFLib runs rdflibScript over pages with Debian's python3-rdflib.
func runRDFLib(t *testing.T, pages []page) map[string]map[string]any {
	t.Helper()
	py := "/usr/bin/python3"
	if err := exec.Command(py, "-c", "import rdflib").Run(); err != nil {
		t.Skip("python3-rdflib not installed for /usr/bin/python3")
	}
	asks, _ := json.Marshal(lyoAsks)
	args := []string{"-c", rdflibScript, string(asks)}
	for _, p := range pages {
		args = append(args, p.file, p.url)
	}
	out, err := exec.Command(py, args...).Output()
	if err != nil {
		var ee *exec.ExitError
		if e, ok := err.(*exec.ExitError); ok {
			ee = e
		}
		t.Fatalf("rdflib: %v\n%s", err, ee.Stderr)
	}
	var res map[string]map[string]any
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	return res
}

// TestRDFLibLyoAssertions parses every page, Turtle and RDF/XML, with
// rdflib, finds the two representations of each the same graph, and runs
// the Lyo change-log assertions as SPARQL ASK queries over each: none
// finds a violation, over pages that hold every change event the Change
// Log keeps. The same queries over a Change Log that breaks each rule do
// find it, so they can fail.
func TestRDFLibLyoAssertions(t *testing.T) {
	t.Parallel()
	f := truncatedFixture(t)
	pages := allPages(t, f, t.TempDir())
	res := runRDFLib(t, pages)
	evs, _ := f.walk()
	changes := 0
	for _, p := range pages {
		r := res[p.file]
		if r == nil || r["triples"].(float64) == 0 {
			t.Errorf("%s (%s): rdflib read nothing: %v", p.url, p.format, r)
			continue
		}
		for name := range lyoAsks {
			if r[name] != false {
				t.Errorf("%s (%s): %s: violated", p.url, p.format, name)
			}
		}
		if iso, ok := r["isomorphic"]; ok && iso != true {
			t.Errorf("%s: the Turtle and RDF/XML graphs differ", p.url)
		}
		if p.format == "turtle" {
			changes += int(r["changes"].(float64))
		}
	}
	if changes != len(evs) || changes == 0 {
		t.Errorf("rdflib counted %d changes, the log has %d", changes, len(evs))
	}

	// A Change Log breaking each rule, so that each query is seen to fail.
	bad := `@prefix trs: <http://open-services.net/ns/core/trs#> .
@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .
<http://x/trs> trs:changeLog [ trs:change <urn:e1>, <urn:e2>, <urn:e3>, _:e4 ] .
<urn:e1> a trs:Creation, trs:Deletion ; trs:changed <http://x/a> ; trs:order 1 .
<urn:e2> a trs:Modification ; trs:changed <http://x/a>, <http://x/b> ; trs:order 2 .
<urn:e3> a trs:Modification ; trs:changed <http://x/a> ; trs:order "three" .
_:e4 a trs:Deletion ; trs:changed <http://x/c> ; trs:order 4 .
`
	dir := t.TempDir()
	file := filepath.Join(dir, "bad.turtle")
	os.WriteFile(file, []byte(bad), 0o644)
	r := runRDFLib(t, []page{{url: "http://x/trs", file: file}})[file]
	for name := range lyoAsks {
		if r[name] != true {
			t.Errorf("the query for %q finds no violation in a Change Log that breaks it", name)
		}
	}
}
