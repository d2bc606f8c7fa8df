package unpack_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/rsdump/rsdump/deststate"
	"github.com/rsdump/rsdump/finding"
	"github.com/rsdump/rsdump/internal/httpc"
	"github.com/rsdump/rsdump/internal/verifytest"
	"github.com/rsdump/rsdump/resourcesync"
	"github.com/rsdump/rsdump/unpack"
)

// listSource serves list documents and resources from a map, on loopback.
type listSource struct {
	t      *testing.T
	srv    *httptest.Server
	base   string            // the resources' base URL
	serve  map[string]string // path → body
	client *http.Client      // apply's; nil: the test server's
	served atomic.Int64
	// closeEvery ends a connection after every closeEvery-th response
	// (0: never), as a server with a cap on a connection's requests does.
	closeEvery int64
	// before, when set, is called with each request's path before it is
	// answered.
	before func(path string)
}

func newListSource(t *testing.T) *listSource {
	s := &listSource{t: t, serve: map[string]string{}}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.before != nil {
			s.before(r.URL.Path)
		}
		if n := s.served.Add(1); s.closeEvery > 0 && n%s.closeEvery == 0 {
			w.Header().Set("Connection", "close")
		}
		body, ok := s.serve[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		fmt.Fprint(w, body)
	}))
	t.Cleanup(s.srv.Close)
	s.base = s.srv.URL + "/res/"
	return s
}

// entry is a Resource List entry of rel declaring data's length and
// sha-256; the server answers served for it.
func (s *listSource) entry(rel, data, served string) resourcesync.URL {
	s.serve["/res/"+rel] = served
	return resourcesync.URL{Loc: s.base + rel, Lastmod: fixedTime,
		MD: &resourcesync.MD{Hash: "sha-256:" + verifytest.SHA256([]byte(data)), Length: resourcesync.Int64(int64(len(data)))}}
}

// doc publishes a list document at /name.
func (s *listSource) doc(name string, h resourcesync.Header, urls []resourcesync.URL) string {
	s.serve["/"+name] = string(verifytest.Encode(s.t, h, urls))
	return s.srv.URL + "/" + name
}

func (s *listSource) apply(loc, dir string, opts unpack.Options) (*unpack.Result, []finding.Finding) {
	s.t.Helper()
	m, err := deststate.NewMapper(deststate.ByURI, s.base)
	if err != nil {
		s.t.Fatal(err)
	}
	var fs []finding.Finding
	opts.Mapper, opts.Client = m, s.client
	if s.client == nil {
		opts.Client = s.srv.Client()
	}
	opts.Events = finding.OnFindings(func(f finding.Finding) { fs = append(fs, f) })
	r, err := unpack.ApplyList(context.Background(), loc, dir, opts)
	if err != nil {
		s.t.Fatalf("ApplyList %s: %v", loc, err)
	}
	return r, fs
}

// TestListResourceFaults: each way a resource can differ from its entry
// is refused by its own check, naming what differs, and leaves nothing
// behind (no file, no directory made for it); a resource whose entry
// gives no hash is kept, reported unverified.
//
// The same through rsdump's own client (transfer.NewClient's settings),
// alone and on a server that ends every connection after a few
// responses, with many good resources between the faults: each answer is
// its own resource's.
func TestListResourceFaults(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		rsdump     bool
		good       int
		closeEvery int64
	}{{"testclient", false, 0, 0}, {"rsdump", true, 60, 0}, {"rsdump-closing", true, 60, 3}} {
		t.Run(tc.name, func(t *testing.T) {
			s := newListSource(t)
			s.closeEvery = tc.closeEvery
			if tc.rsdump {
				s.client = httpc.New(httpc.Options{DisableCompression: true})
			}
			listResourceFaults(t, s, tc.good)
		})
	}
}

func listResourceFaults(t *testing.T, s *listSource, good int) {
	nolen := s.entry("nolen/big.txt", "", strings.Repeat("n", 100))
	nolen.MD.Length, nolen.MD.Hash = nil, ""
	nohash := s.entry("nohash.txt", "no hash given", "no hash given")
	nohash.MD.Hash = ""
	urls := []resourcesync.URL{
		s.entry("good.txt", "good", "good"),
		s.entry("long/x.txt", "long", "longer than said"),
		s.entry("short/x.txt", "short but said long", "short"),
		s.entry("badhash.txt", "right", "wrong"),
		s.entry("gone/a/404.txt", "gone", "gone"),
		nolen,
		nohash,
	}
	want := map[string]string{"good.txt": "good", "nohash.txt": "no hash given"}
	for i := range good {
		rel, data := fmt.Sprintf("many/%02d.txt", i), fmt.Sprintf("resource %d", i)
		urls = append(urls[:i%len(urls)], append([]resourcesync.URL{s.entry(rel, data, data)}, urls[i%len(urls):]...)...)
		want[rel] = data
	}
	delete(s.serve, "/res/gone/a/404.txt")
	loc := s.doc("resourcelist.xml", resourcesync.Header{Kind: resourcesync.URLSet,
		MD: resourcesync.MD{Capability: resourcesync.CapResourceList, At: fixedTime}}, urls)
	dst := t.TempDir()
	r, fs := s.apply(loc, dst, unpack.Options{MaxResourceSize: 10})
	if r.Written != 2+good || r.Refused != 5 {
		t.Errorf("%+v, want %d written and 5 refused\n%s", r, 2+good, dump(fs))
	}
	for _, c := range []struct{ path, check, msg string }{
		{"long/x.txt", finding.CheckLength, "more than the list's 4 bytes"},
		{"short/x.txt", finding.CheckLength, "5 bytes, the list says 19"},
		{"badhash.txt", finding.CheckHash, "the list says sha-256:" + verifytest.SHA256([]byte("right"))},
		{"gone/a/404.txt", finding.CheckRead, s.base + "gone/a/404.txt"},
		{"nolen/big.txt", finding.CheckLength, "more than 10 bytes, the most a resource may have when the list gives no length"},
	} {
		if f, ok := find(fs, finding.Error, c.check, c.path); !ok || !strings.Contains(f.Msg, c.msg) {
			t.Errorf("%s: no %s error saying %q\n%s", c.path, c.check, c.msg, dump(fs))
		}
	}
	if f, ok := find(fs, finding.Unverified, finding.CheckHash, "nohash.txt"); !ok || !strings.Contains(f.Msg, "no hash") {
		t.Errorf("nohash.txt not reported unverified\n%s", dump(fs))
	}
	equalMaps(t, "tree", contents(readTree(t, dst)), want)
	for _, d := range []string{"long", "short", "gone", "nolen"} {
		if _, err := os.Stat(filepath.Join(dst, d)); !os.IsNotExist(err) {
			t.Errorf("%s: left behind (%v)", d, err)
		}
	}
	if st := readState(t, dst); !st.ResourceDumpAt.IsZero() {
		t.Errorf("a list with refused resources recorded as applied: %+v", st)
	}
}

// TestListSortsSpill: with sorts that hold two records and batches of
// two, a Resource List index whose parts name one file three times keeps
// the first and refuses the others, naming the entry and part they
// repeat; the rest lands.
func TestListSortsSpill(t *testing.T) {
	unpack.SetListSortRun(t, 2)
	unpack.SetListBatch(t, 2)
	s := newListSource(t)
	md := resourcesync.MD{Capability: resourcesync.CapResourceList, At: fixedTime}
	var parts []resourcesync.URL
	for i, names := range [][]string{{"a", "b", "c"}, {"d", "a", "e"}, {"a", "f"}} {
		var urls []resourcesync.URL
		for _, n := range names {
			urls = append(urls, s.entry(n+".txt", n, n))
		}
		parts = append(parts, resourcesync.URL{Loc: s.doc(fmt.Sprintf("part%d.xml", i+1), resourcesync.Header{Kind: resourcesync.URLSet, MD: md}, urls)})
	}
	loc := s.doc("resourcelist.xml", resourcesync.Header{Kind: resourcesync.SitemapIndex, MD: md}, parts)
	dst := t.TempDir()
	r, fs := s.apply(loc, dst, unpack.Options{})
	if r.Written != 6 || r.Refused != 2 {
		t.Errorf("%+v, want 6 written and 2 refused\n%s", r, dump(fs))
	}
	want := "lands on the same file as entry 1 of " + s.srv.URL + "/part1.xml"
	n := 0
	for _, f := range fs {
		if f.Severity == finding.Error && f.Path == "a.txt" && strings.Contains(f.Msg, want) {
			n++
		}
	}
	if n != 2 {
		t.Errorf("%d errors say %q, want 2\n%s", n, want, dump(fs))
	}
	equalMaps(t, "tree", contents(readTree(t, dst)), map[string]string{"a.txt": "a", "b.txt": "b", "c.txt": "c", "d.txt": "d", "e.txt": "e", "f.txt": "f"})
	if entries, _ := os.ReadDir(filepath.Join(dst, deststate.DirName, "tmp")); len(entries) != 0 {
		t.Errorf("the survey left %d files in %s", len(entries), filepath.Join(dst, deststate.DirName, "tmp"))
	}
}
