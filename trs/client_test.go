package trs

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
)

// specDocs are the examples of the specification, as specServer serves
// them.
var specDocs = map[string]string{
	"/trackedResourceSet": `@prefix trs: <http://open-services.net/ns/core/trs#> .
<trackedResourceSet>
  a trs:TrackedResourceSet ;
  trs:base <baseResources/> ;
  trs:changeLog [
    a trs:ChangeLog ;
    trs:change <urn:urn-3:cm1.example.com:2010-10-27T17:39:33.000Z:103> ;
    trs:change <urn:urn-3:cm1.example.com:2010-10-27T17:39:32.000Z:102> ;
    trs:change <urn:urn-3:cm1.example.com:2010-10-27T17:39:31.000Z:101> ;
    trs:previous <changeLog/1>
] .
<urn:urn-3:cm1.example.com:2010-10-27T17:39:33.000Z:103> a trs:Creation ; trs:changed <bugs/23> ; trs:order "103"^^<http://www.w3.org/2001/XMLSchema#integer> .
<urn:urn-3:cm1.example.com:2010-10-27T17:39:32.000Z:102> a trs:Modification ; trs:changed <bugs/22> ; trs:order 102 .
<urn:urn-3:cm1.example.com:2010-10-27T17:39:31.000Z:101> a trs:Deletion ; trs:changed <bugs/21> ; trs:order 101 .
`,
	"/changeLog/1": `@prefix trs: <http://open-services.net/ns/core/trs#> .
</changeLog/1> a trs:ChangeLog ;
  trs:change <urn:urn-3:cm1.example.com:2010-10-27T17:39:30.000Z:100>, <urn:urn-3:cm1.example.com:2010-10-27T17:39:29.000Z:99> .
<urn:urn-3:cm1.example.com:2010-10-27T17:39:30.000Z:100> a trs:Creation ; trs:changed </bugs/21> ; trs:order 100 .
<urn:urn-3:cm1.example.com:2010-10-27T17:39:29.000Z:99> a trs:Creation ; trs:changed </bugs/3> ; trs:order 99 .
`,
	"/baseResources/page1": `@prefix trs: <http://open-services.net/ns/core/trs#> .
@prefix ldp: <http://www.w3.org/ns/ldp#> .
</baseResources/>
  a ldp:DirectContainer;
  ldp:membershipResource </baseResources/>;
  ldp:hasMemberRelation ldp:member;
  trs:cutoffEvent <urn:urn-3:cm1.example.com:2010-10-27T17:39:31.000Z:101> ;
  ldp:member </bugs/1> ;
  ldp:member </bugs/2> ;
  ldp:member </bugs/3> .
`,
	"/baseResources/page2": `@prefix ldp: <http://www.w3.org/ns/ldp#> .
</baseResources/> ldp:member </bugs/21>, </bugs/22> .
`,
}

// specServer serves the examples of the specification (its Tracked
// Resource Set with a trs:previous segment, a Base paged by a 303 to its
// first page and Link rel="next"), with cm1.example.com replaced by the
// server's address and relative IRIs where the examples' server would
// have written them. The examples' "." before the "]" that closes the
// Change Log is left out: it is not Turtle (rapper refuses it too).
func specServer(t *testing.T) *httptest.Server {
	var srv *httptest.Server
	docs := specDocs
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/baseResources/":
			http.Redirect(w, r, "/baseResources/page1", http.StatusSeeOther)
			return
		case "/baseResources/page1":
			w.Header().Add("Link", `</baseResources/page1>; rel="first", </baseResources/page2>; rel="next", <http://www.w3.org/ns/ldp#Page>; rel="type"`)
		}
		doc, ok := docs[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/turtle")
		w.Write([]byte(doc))
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestClientReadsSpecExamples: the client reads the specification's own
// examples: the set and its inline Change Log, the Base through its 303
// and Link rel="next", the events after the cutoff (oldest first), and
// those after a sync point in the older segment.
func TestClientReadsSpecExamples(t *testing.T) {
	t.Parallel()
	srv := specServer(t)
	ctx := context.Background()
	c := &Client{}
	set, err := c.Read(ctx, srv.URL+"/trackedResourceSet")
	if err != nil {
		t.Fatal(err)
	}
	if set.Base != srv.URL+"/baseResources/" || len(set.Log.Events) != 3 || set.Log.Previous != srv.URL+"/changeLog/1" {
		t.Fatalf("%+v", set)
	}
	var members []string
	cutoff, err := c.Base(ctx, set.Base, func(p BasePage) error {
		members = append(members, p.Members...)
		return nil
	})
	if err != nil || len(members) != 5 || cutoff != "urn:urn-3:cm1.example.com:2010-10-27T17:39:31.000Z:101" || members[4] != srv.URL+"/bugs/22" {
		t.Fatalf("members %v, cutoff %s, %v", members, cutoff, err)
	}
	evs, err := since(ctx, c, set, cutoff)
	if err != nil || len(evs) != 2 || evs[0].Order != 102 || evs[1].Order != 103 || evs[1].Type != Creation || evs[1].Changed != srv.URL+"/bugs/23" {
		t.Fatalf("after the cutoff: %+v %v", evs, err)
	}
	evs, err = since(ctx, c, set, "urn:urn-3:cm1.example.com:2010-10-27T17:39:29.000Z:99")
	if err != nil || len(evs) != 4 || evs[0].Order != 100 {
		t.Fatalf("after event 99: %+v %v", evs, err)
	}
	if _, err := since(ctx, c, set, "urn:urn-3:cm1.example.com:2010-10-27T17:39:28.000Z:98"); !errors.Is(err, ErrLost) {
		t.Errorf("an event before the log: %v", err)
	}
	if _, err := c.Read(ctx, srv.URL+"/changeLog/1"); !errors.Is(err, ErrNotTRS) {
		t.Errorf("a segment read as a set: %v", err)
	}
}
