package trs

import (
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/rsdump/rsdump/layout"
	"github.com/rsdump/rsdump/pack"
	"github.com/rsdump/rsdump/resourcesync"
)

// TestSpecServerMUSTs states every MUST of OSLC Tracked Resource Set 2.0
// that binds a server, each as a check of what the handler serves over a
// Source packed with three generations of changes (Base pages of 4
// members, Change Log segments of 2 events). The clause quoted is the
// specification's.
func TestSpecServerMUSTs(t *testing.T) {
	t.Parallel()
	newF := func(t *testing.T, keep int) *fixture {
		f := newFixture(t, 10, Options{PageSize: 4, SegmentSize: 2, Keep: keep})
		for range 3 {
			f.generation()
		}
		return f
	}
	tests := []struct {
		clause string
		keep   int
		check  func(t *testing.T, f *fixture)
	}{
		{"The Server MUST provide an HTTP(S) URI corresponding to its Resource Set", 0, func(t *testing.T, f *fixture) {
			g, _ := f.graph("/trs")
			if len(g.typed(trsTrackedResourceSet)) != 1 || g[iri(f.url("/trs"))] == nil {
				t.Errorf("the Tracked Resource Set URI is not the subject of a trs:TrackedResourceSet")
			}
		}},
		{"A Tracked Resource Set MUST provide references to the Base and Change Log using the trs:base and trs:changeLog predicates", 0, func(t *testing.T, f *fixture) {
			g, _ := f.graph("/trs")
			s := iri(f.url("/trs"))
			if len(g[s][trsBase]) != 1 || len(g[s][trsChangeLog]) != 1 {
				t.Errorf("trs:base %v, trs:changeLog %v: exactly one each", g[s][trsBase], g[s][trsChangeLog])
			}
		}},
		{"the Tracked Resource Set's representation MUST contain the triples for the referenced Change Log; the Change Events MUST be present", 0, func(t *testing.T, f *fixture) {
			g, _ := f.graph("/trs")
			cl := g[iri(f.url("/trs"))][trsChangeLog][0]
			if !slices.Contains(g[cl][rdfType], iri(trsChangeLogClass)) || len(g[cl][trsChange]) == 0 {
				t.Fatalf("the Change Log inline: %v", g[cl])
			}
			for _, e := range g[cl][trsChange] {
				if len(g[e][rdfType]) != 1 || len(g[e][trsChanged]) != 1 || len(g[e][trsOrder]) != 1 {
					t.Errorf("event %s inline without its triples: %v", e, g[e])
				}
			}
		}},
		{"Change Events MUST have URIs (i.e., they cannot be Blank Nodes)", 0, func(t *testing.T, f *fixture) {
			for _, seg := range segments(t, f) {
				g, _ := f.graph(seg)
				for _, ps := range g {
					for _, e := range ps[trsChange] {
						if e.Kind != IRI {
							t.Errorf("%s: a Change Event that is %s", seg, e)
						}
					}
				}
			}
		}},
		{"As changes continue to occur, a Server MUST add new Change Events to the newest Change Log segment", 0, func(t *testing.T, f *fixture) {
			before, _ := f.walk()
			f.generation()
			g, _ := f.graph("/trs")
			cl := g[iri(f.url("/trs"))][trsChangeLog][0]
			added := 0
			for _, e := range g[cl][trsChange] {
				if _, old := before[e.Value]; !old {
					added++
				}
			}
			if added == 0 {
				t.Errorf("no new event inline after a generation of changes")
			}
		}},
		{"The sequence number (i.e., trs:order) of newer entries MUST be greater than previous ones", 0, func(t *testing.T, f *fixture) {
			evs := byOrder(first(f.walk()))
			cl := f.changeEntries()
			if len(evs) != len(cl) {
				t.Fatalf("%d events for %d Change List entries", len(evs), len(cl))
			}
			for i := 1; i < len(evs); i++ {
				ti, _ := cl[i].ChangeTime()
				tp, _ := cl[i-1].ChangeTime()
				if evs[i].Order <= evs[i-1].Order || ti.Before(tp) {
					t.Errorf("event %d (order %d, at %s) after order %d at %s", i, evs[i].Order, ti, evs[i-1].Order, tp)
				}
			}
		}},
		{"The URI of a Change Event MUST be guaranteed unique, even in the wake of a Server rollback where sequence numbers get reused", 0, func(t *testing.T, f *fixture) {
			before, _ := f.walk()
			// A rollback: the history is rewritten from another baseline,
			// and the orders start again at 1.
			os.Remove(filepath.Join(f.out, pack.StateName))
			f.opts.Since = filepath.Join(f.out, layout.ResourceListName)
			f.generation()
			after, _ := f.walk()
			reused := 0
			for uri, e := range after {
				for _, old := range before {
					if old.Order == e.Order {
						reused++
						if old.URI == uri && (old.Changed != e.Changed || old.Type != e.Type) {
							t.Errorf("order %d reused with the same URI %s for another change", e.Order, uri)
						}
					}
				}
			}
			if reused == 0 {
				t.Fatalf("the rollback reused no order: %d events before, %d after", len(before), len(after))
			}
		}},
		{"The Change Log MUST contain Change Events for every Resource creation, deletion, and modification during that period; a Server MUST report a Resource modification event if a GET on it would return a semantically different response", 0, func(t *testing.T, f *fixture) {
			evs := byOrder(first(f.walk()))
			cl := f.changeEntries()
			if len(evs) != len(cl) {
				t.Fatalf("%d events for %d changes", len(evs), len(cl))
			}
			for i, u := range cl {
				if evs[i].Changed != u.Loc || changeOfType(evs[i].Type) != u.MD.Change {
					t.Errorf("event %d: %s of %s; the Change List says %s of %s", i+1, evs[i].Type, evs[i].Changed, u.MD.Change, u.Loc)
				}
			}
		}},
		{"Servers MUST include all of the triples corresponding to a Change Log segment in the same HTTP response", 0, func(t *testing.T, f *fixture) {
			segs := segments(t, f)
			if len(segs) < 3 {
				t.Fatalf("only %d segments", len(segs))
			}
			for _, seg := range segs[1:] {
				g, _ := f.graph(seg)
				s := g[iri(seg)]
				if !slices.Contains(s[rdfType], iri(trsChangeLogClass)) || len(s[trsChange]) == 0 {
					t.Errorf("%s: %v", seg, s)
				}
				for _, e := range s[trsChange] {
					if len(g[e][rdfType]) != 1 || len(g[e][trsChanged]) != 1 || len(g[e][trsOrder]) != 1 {
						t.Errorf("%s: event %s without its triples", seg, e)
					}
				}
			}
		}},
		{"the Change Log MUST contain the base cutoff event of the corresponding Base, and all Change Events more recent than it (truncated to 1 event)", 1, func(t *testing.T, f *fixture) {
			_, cutoff, _ := f.members()
			evs, segs := f.walk()
			c, ok := evs[cutoff]
			if !ok {
				t.Fatalf("the cutoff %s is not in the truncated Change Log", cutoff)
			}
			all := len(f.changeEntries())
			for o := c.Order; o <= int64(all); o++ {
				if !slices.ContainsFunc(byOrder(evs), func(e Event) bool { return e.Order == o }) {
					t.Errorf("event %d, after the cutoff, truncated", o)
				}
			}
			if len(evs) >= all {
				t.Errorf("nothing truncated: %d events of %d", len(evs), all)
			}
			// The segment before the horizon is gone: 404, which a client
			// must be prepared for.
			if resp, _ := f.get("/trs/changelog/1", ""); resp.StatusCode != http.StatusNotFound {
				t.Errorf("a truncated segment answers %s (segments linked: %v)", resp.Status, segs)
			}
		}},
		{"When the Base has no base cutoff event, the Change Log MUST contain all Change Events back to the start of time; i.e., no truncation is allowed", 1, func(t *testing.T, f *fixture) {
			// A Capability List naming the Change List alone: the Base is
			// empty, at the start of time.
			writeCapabilityList(t, f.out, resourcesync.CapChangeList, layout.ChangeListName)
			_, cutoff, _ := f.members()
			evs, _ := f.walk()
			if cutoff != rdfNil || len(evs) != len(f.changeEntries()) {
				t.Errorf("cutoff %s, %d events of %d", cutoff, len(evs), len(f.changeEntries()))
			}
		}},
		{"Each Resource in the Resource Set MUST be referenced from the container using an LDP membership predicate", 0, func(t *testing.T, f *fixture) {
			members, _, pages := f.members()
			var want []string
			for _, u := range f.entries(layout.ResourceListName) {
				want = append(want, u.Loc)
			}
			sort.Strings(want)
			if !slices.Equal(members, want) || len(pages) < 3 {
				t.Errorf("%d pages, members %v, want %v", len(pages), members, want)
			}
		}},
		{"There MUST NOT be a gap between the Base portion and the Change Log portion; for each erroneously reported Resource in the Base, the Server MUST at some point include a corrective Change Event in the Change Log more recent than the base cutoff event (the Base with the events after its cutoff is the Source as packed)", 0, func(t *testing.T, f *fixture) {
			members, cutoff, _ := f.members()
			set := map[string]bool{}
			for _, m := range members {
				set[m] = true
			}
			evs, _ := f.walk()
			at := evs[cutoff].Order
			for _, e := range byOrder(evs) {
				if e.Order > at {
					set[e.Changed] = e.Type != Deletion
				}
			}
			var files []string
			filepath.WalkDir(f.src, func(p string, d os.DirEntry, err error) error {
				if err == nil && !d.IsDir() {
					rel, _ := filepath.Rel(f.src, p)
					files = append(files, fixtureBase+filepath.ToSlash(rel))
				}
				return nil
			})
			var got []string
			for m, in := range set {
				if in {
					got = append(got, m)
				}
			}
			sort.Strings(got)
			sort.Strings(files)
			if !slices.Equal(got, files) || len(files) == 0 {
				t.Errorf("the Base corrected by the events after the cutoff: %v, the Source: %v", got, files)
			}
		}},
		{"A Server MUST refer to a given resource using the exact same URI in the Base (membership triple) and every Change Event (trs:changed reference)", 0, func(t *testing.T, f *fixture) {
			members, _, _ := f.members()
			evs, _ := f.walk()
			seen := 0
			for _, e := range evs {
				if e.Type != Deletion && !slices.Contains(members, e.Changed) && !deletedLater(evs, e) {
					t.Errorf("event %d names %s, which the Base spells otherwise or lacks", e.Order, e.Changed)
				}
				if slices.Contains(members, e.Changed) {
					seen++
				}
			}
			if seen == 0 {
				t.Errorf("no event names a member")
			}
		}},
		{"The response representation of a Base MUST include a trs:cutoffEvent property ... the cutoff Change Event MUST appear in the non-truncated portion of the Change Log; the first single-page resource of a Base MUST include a trs:cutoffEvent property", 2, func(t *testing.T, f *fixture) {
			_, cutoff, pages := f.members()
			g, _ := f.graph(pages[0])
			if co := g[iri(f.url("/trs/base"))][trsCutoffEvent]; len(co) != 1 || co[0].Value != cutoff {
				t.Errorf("first page's cutoff %v", co)
			}
			evs, _ := f.walk()
			if _, ok := evs[cutoff]; !ok {
				t.Errorf("cutoff %s not in the Change Log", cutoff)
			}
			// The most recent event the Base reflects: the Resource List is
			// written with the last Change List, so the newest.
			if last := byOrder(evs); last[len(last)-1].URI != cutoff {
				t.Errorf("cutoff %s, newest event %s", cutoff, last[len(last)-1].URI)
			}
		}},
		{"If the Server allows the representation of Base page resources to vary over time, the Server MUST ensure that the set of Resources a Client would infer as members is necessarily an approximation ... (pages of a changed Base get new URIs; the old ones answer 404)", 0, func(t *testing.T, f *fixture) {
			_, _, pages := f.members()
			f.generation()
			if resp, _ := f.get(pages[1], ""); resp.StatusCode != http.StatusNotFound {
				t.Errorf("page %s of the old Base answers %s", pages[1], resp.Status)
			}
			_, _, now := f.members()
			if now[0] == pages[0] {
				t.Errorf("the new Base has the old page URI %s", now[0])
			}
		}},
		{"TRS servers MUST support Turtle; if the client does not indicate a preference, text/turtle MUST be returned", 0, func(t *testing.T, f *fixture) {
			for _, p := range []string{"/trs", "/trs/base", "/trs/changelog/2"} {
				resp, body := f.get(p, "")
				if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/turtle") {
					t.Errorf("%s without Accept: %s %s", p, resp.Status, ct)
				}
				if _, err := ParseTurtle(body, f.url(p)); err != nil {
					t.Errorf("%s: %v", p, err)
				}
			}
		}},
		{"The TRS servers MUST document the URLs of its Tracked Resource Set resources in their documentation", 0, func(t *testing.T, f *fixture) {
			b, err := os.ReadFile("../docs/trs.md")
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range []string{"serve DIR --trs", "trs/base", "trs/changelog/"} {
				if !strings.Contains(string(b), s) {
					t.Errorf("docs/trs.md does not say %q", s)
				}
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.clause, func(t *testing.T) { tc.check(t, newF(t, tc.keep)) })
	}
}

func first[K comparable, V any](m map[K]V, _ []string) map[K]V { return m }

func changeOfType(t string) string {
	switch t {
	case Creation:
		return resourcesync.ChangeCreated
	case Deletion:
		return resourcesync.ChangeDeleted
	}
	return resourcesync.ChangeUpdated
}

// deletedLater says whether a later event deletes e's resource.
func deletedLater(evs map[string]Event, e Event) bool {
	for _, o := range evs {
		if o.Changed == e.Changed && o.Type == Deletion && o.Order > e.Order {
			return true
		}
	}
	return false
}

// segments are the URLs of the Tracked Resource Set and every Change Log
// segment before it.
func segments(t *testing.T, f *fixture) []string {
	_, segs := f.walk()
	return segs
}

func writeCapabilityList(t *testing.T, dir, capability, name string) {
	t.Helper()
	fh, err := os.Create(filepath.Join(dir, CapabilityListName))
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	enc, err := resourcesync.NewEncoder(fh, resourcesync.Header{Kind: resourcesync.URLSet, MD: resourcesync.MD{Capability: resourcesync.CapCapabilityList}})
	if err != nil {
		t.Fatal(err)
	}
	if err := enc.Encode(resourcesync.URL{Loc: fixtureDump + name, MD: &resourcesync.MD{Capability: capability}}); err != nil {
		t.Fatal(err)
	}
	if err := enc.Close(); err != nil {
		t.Fatal(err)
	}
}
