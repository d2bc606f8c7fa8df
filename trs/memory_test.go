package trs

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rsdump/rsdump/internal/racetest"
)

// pageSize is the size of the documents the memory tests serve: the 2
// MB of issue 39's Base page.
const pageSize = 2 << 20

// memoryDoc is a document of about pageSize bytes, and whether the
// client must read it (what a TRS server writes) or refuse it.
type memoryDoc struct {
	name, doc string
	ok        bool
	want      string // in the error of one refused
}

// memoryDocs are the documents of TestPageMemory and BenchmarkPageMemory:
// the Base page and Change Log segment this package's server writes, at
// about pageSize, and documents shaped to take the most memory per byte
// (blank nodes, long names, subjects, literals) or to nest without end.
func memoryDocs(base string) []memoryDoc {
	page := newGraph()
	b := iri(base)
	page.add(b, iri(rdfType), iri(ldpDirectContainer))
	page.add(b, iri(trsCutoffEvent), iri(rdfNil))
	for i := 0; len(page.by[b])*58 < pageSize; i++ {
		page.add(b, iri(ldpMember), iri(fmt.Sprintf("http://127.0.0.1:8080/data/d%04d/f%07d.txt", i/128, i)))
	}
	seg := newGraph()
	cl := iri(base)
	seg.add(cl, iri(rdfType), iri(trsChangeLogClass))
	var evs []event
	for i := 1; len(evs)*230 < pageSize; i++ {
		evs = append(evs, event{order: int64(i), kind: Modification, change: "updated", changed: fmt.Sprintf("http://127.0.0.1:8080/data/d%04d/f%07d.txt", i/128, i), when: time.Unix(int64(1e9+i), 0)})
	}
	for _, e := range evs {
		seg.add(cl, iri(trsChange), iri(e.uri()))
	}
	for _, e := range evs {
		seg.add(iri(e.uri()), iri(rdfType), iri(e.kind))
		seg.add(iri(e.uri()), iri(trsChanged), iri(e.changed))
		seg.add(iri(e.uri()), iri(trsOrder), integer(e.order))
	}
	repeat := func(head, item, tail string) string {
		var s strings.Builder
		s.WriteString(head)
		for i := 0; s.Len() < pageSize; i++ {
			s.WriteString(strings.ReplaceAll(item, "N", strconv.Itoa(i)))
		}
		s.WriteString(tail)
		return s.String()
	}
	long := strings.Repeat("x", 4000)
	subj := "<" + base + "> <" + NSLDP + "member> "
	return []memoryDoc{
		{name: "base page", doc: turtleOf(page), ok: true},
		{name: "segment", doc: turtleOf(seg), ok: true},
		{name: "blank nodes", doc: repeat(subj, "[],", "[] ."), want: "times its size"},
		{name: "blank node labels", doc: repeat(subj, "_:bN,", "[] ."), want: "times its size"},
		{name: "prefixed names", doc: repeat("@prefix p: <http://127.0.0.1/"+long+"/> .\n"+subj, "p:N,", "p:x ."), want: "times its size"},
		{name: "relative IRIs", doc: repeat("@base <http://127.0.0.1/"+long+"/> .\n"+subj, "<N>,", "<x> ."), want: "times its size"},
		{name: "subjects", doc: repeat("", "<sN> <p> 1 .\n", ""), want: "times its size"},
		{name: "literals", doc: repeat(subj, "1,", "1 ."), want: "times its size"},
		{name: "collections", doc: repeat(subj, "(", ""), want: "nested deeper than 64"},
		{name: "property lists", doc: repeat(subj, "[ <p> ", ""), want: "nested deeper than 64"},
		{name: "collection of lists", doc: repeat(subj+"(", "( ) ", ") ."), want: "times its size"},
	}
}

func turtleOf(g *graph) string {
	var b strings.Builder
	g.writeTurtle(&b)
	return b.String()
}

// TestPageMemory serves each of memoryDocs on loopback and reads it
// with the client in a process of its own, whose peak RSS while it reads
// (VmHWM, reset before) must stay within 8 times the document's size: the
// documents this package's server writes are read, the others refused
// with an error naming the document, none crash.
func TestPageMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("reads 11 documents of 2 MB, each in a process of its own")
	}
	if racetest.Enabled {
		t.Skip("the race detector's own memory would be measured")
	}
	if _, err := os.Stat("/proc/self/clear_refs"); err != nil {
		t.Skip("needs Linux's /proc/self/clear_refs to measure the peak RSS")
	}
	for _, d := range measureDocs(t) {
		t.Logf("%-20s %8d bytes: peak RSS +%5.1f MiB (%.1fx), %s", d.name, len(d.doc), float64(d.rss)/(1<<20), d.ratio, d.result)
		if d.ratio > 8 {
			t.Errorf("%s: the client's RSS grew by %.1f times the document's size, want at most 8", d.name, d.ratio)
		}
		switch {
		case d.ok && d.result != "ok":
			t.Errorf("%s: %s, want it read", d.name, d.result)
		case !d.ok && (!strings.Contains(d.result, d.want) || !strings.Contains(d.result, d.url)):
			t.Errorf("%s: %s, want an error naming %s and %q", d.name, d.result, d.url, d.want)
		}
	}
}

type measured struct {
	memoryDoc
	url    string
	rss    int64
	ratio  float64
	result string
}

// measureDocs reads each document in a child process (this test binary,
// running TestPageMemoryChild).
func measureDocs(t testing.TB) []measured {
	docs := map[string]string{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", turtleContentType)
		http.ServeContent(w, r, "", time.Time{}, strings.NewReader(docs[r.URL.Path]))
	}))
	defer srv.Close()
	all := memoryDocs(srv.URL + "/base")
	for i, d := range all { // before the server is asked for any
		docs[fmt.Sprintf("/base/%d", i)] = d.doc
	}
	var out []measured
	for i, d := range all {
		m := measured{memoryDoc: d, url: fmt.Sprintf("%s/base/%d", srv.URL, i)}
		cmd := exec.Command(os.Args[0], "-test.run=^TestPageMemoryChild$", "-test.v")
		cmd.Env = append(os.Environ(), "TRS_MEMORY_URL="+m.url, "TRS_MEMORY_BASE="+srv.URL+"/base")
		b, err := cmd.CombinedOutput()
		line := string(b)
		if _, rest, ok := strings.Cut(line, "rss-delta "); ok {
			n, _, _ := strings.Cut(rest, " ")
			m.rss, _ = strconv.ParseInt(n, 10, 64)
			m.result, _, _ = strings.Cut(rest[len(n)+1:], "\n")
		} else {
			t.Fatalf("%s: the child said %v:\n%s", d.name, err, b)
		}
		m.ratio = float64(m.rss) / float64(len(d.doc))
		out = append(out, m)
	}
	return out
}

// TestPageMemoryChild is the child of TestPageMemory: it reads the page
// at $TRS_MEMORY_URL as a page of the Base and prints how much its peak
// RSS grew, and the outcome.
func TestPageMemoryChild(t *testing.T) {
	loc := os.Getenv("TRS_MEMORY_URL")
	if loc == "" {
		t.Skip("run by TestPageMemory")
	}
	runtime.GC()
	debug.FreeOSMemory()
	before := procStatus(t, "VmRSS")
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		t.Fatal(err)
	}
	c := &Client{}
	_, err := c.page(context.Background(), os.Getenv("TRS_MEMORY_BASE"), loc)
	result := "ok"
	if err != nil {
		result = strings.ReplaceAll(err.Error(), "\n", " ")
	}
	fmt.Printf("rss-delta %d %s\n", procStatus(t, "VmHWM")-before, result)
}

// procStatus is a field of /proc/self/status, in bytes.
func procStatus(t testing.TB, field string) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n << 10
		}
	}
	t.Fatalf("no %s in /proc/self/status", field)
	return 0
}

// BenchmarkPageMemory reads each of memoryDocs as a Base page: the time
// and allocations of the parse and the reading of the page in this
// process, and (x-rss) the growth of the peak RSS of a process of its
// own that fetched and read it, over the document's size, which
// TestPageMemory holds to 8.
func BenchmarkPageMemory(b *testing.B) {
	rss := map[string]float64{}
	for _, m := range measureDocs(b) {
		rss[m.name] = m.ratio
	}
	base := "http://127.0.0.1:8080/base"
	for _, d := range memoryDocs(base) {
		b.Run(strings.ReplaceAll(d.name, " ", "-"), func(b *testing.B) {
			b.SetBytes(int64(len(d.doc)))
			for b.Loop() {
				if g, err := parseTurtle(d.doc, base+"/1"); err == nil {
					readPage(g, http.Header{}, base, base+"/1")
				}
			}
			b.ReportMetric(rss[d.name], "x-rss")
		})
	}
}
