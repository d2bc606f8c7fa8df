package trs

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/rsdump/rsdump/layout"
	"github.com/rsdump/rsdump/pack"
	"github.com/rsdump/rsdump/resourcesync"
)

// fixture is a Source packed into a directory, with generations of
// changes, and the Tracked Resource Set of it on a loopback server.
type fixture struct {
	t        *testing.T
	src, out string
	at       time.Time
	opts     pack.Options
	srv      *httptest.Server
	h        *Handler
	gen      int
}

const (
	fixtureBase = "http://example.org/res/"
	fixtureDump = "http://example.org/dump/"
)

func newFixture(t *testing.T, files int, o Options) *fixture {
	t.Helper()
	f := &fixture{t: t, src: t.TempDir(), out: t.TempDir(), at: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	for i := range files {
		f.write(fmt.Sprintf("d%d/f%02d.txt", i%3, i), fmt.Sprintf("file %d", i), f.at.Add(-time.Hour))
	}
	f.opts = pack.Options{BaseURL: fixtureBase, DumpURL: fixtureDump, At: f.at, Compress: pack.Store}
	f.pack()
	root, err := os.OpenRoot(f.out)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	o.Open = func(name string) (*os.File, os.FileInfo, error) {
		fi, err := root.Lstat(name)
		if err != nil {
			return nil, nil, err
		}
		if !fi.Mode().IsRegular() {
			return nil, nil, fmt.Errorf("%s: not a regular file", name)
		}
		file, err := root.Open(name)
		return file, fi, err
	}
	o.Path = "/trs"
	if f.h, err = New(o); err != nil {
		t.Fatal(err)
	}
	f.srv = httptest.NewServer(f.h)
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fixture) write(rel, data string, mtime time.Time) {
	p := filepath.Join(f.src, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		f.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		f.t.Fatal(err)
	}
	os.Chtimes(p, mtime, mtime)
}

func (f *fixture) pack() {
	f.t.Helper()
	if _, err := pack.Pack(context.Background(), f.src, f.out, f.opts); err != nil {
		f.t.Fatal(err)
	}
}

// generation changes the Source (one file updated, one created, one
// deleted) and packs the changes.
func (f *fixture) generation() {
	f.t.Helper()
	f.gen++
	f.at = f.at.Add(time.Hour)
	f.write(fmt.Sprintf("d%d/f%02d.txt", f.gen%3, f.gen), fmt.Sprintf("updated in %d", f.gen), f.at.Add(-30*time.Minute))
	f.write(fmt.Sprintf("new/g%02d.txt", f.gen), fmt.Sprintf("created in %d", f.gen), f.at.Add(-20*time.Minute))
	os.Remove(filepath.Join(f.src, fmt.Sprintf("d%d/f%02d.txt", (f.gen+1)%3, f.gen+1)))
	f.opts.Changes, f.opts.At = true, f.at
	f.pack()
}

func (f *fixture) url(path string) string { return f.srv.URL + path }

// get fetches a URL of the server (a path, or absolute) with an Accept
// field (none when "").
func (f *fixture) get(loc, accept string, hdr ...string) (*http.Response, []byte) {
	f.t.Helper()
	if strings.HasPrefix(loc, "/") {
		loc = f.url(loc)
	}
	req, _ := http.NewRequest(http.MethodGet, loc, nil)
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		f.t.Fatal(err)
	}
	return resp, b
}

// graph fetches loc as Turtle and parses it.
func (f *fixture) graph(loc string) (rdfGraph, *http.Response) {
	f.t.Helper()
	resp, b := f.get(loc, "text/turtle")
	if resp.StatusCode != http.StatusOK {
		f.t.Fatalf("GET %s: %s\n%s", loc, resp.Status, b)
	}
	ts, err := ParseTurtle(b, resp.Request.URL.String())
	if err != nil {
		f.t.Fatalf("GET %s: %v\n%s", loc, err, b)
	}
	return index(ts), resp
}

// changeEntries are the entries of the Change List pack wrote, in order.
func (f *fixture) changeEntries() []resourcesync.URL {
	return f.entries(layout.ChangeListName)
}

func (f *fixture) entries(name string) []resourcesync.URL {
	f.t.Helper()
	var out []resourcesync.URL
	ld := resourcesync.Loader{Entry: func(d *resourcesync.Document, _ int, u resourcesync.URL) error {
		if d.Header.Kind == resourcesync.URLSet {
			out = append(out, u)
		}
		return nil
	}}
	if err := ld.Load(context.Background(), filepath.Join(f.out, name)); err != nil {
		f.t.Fatal(err)
	}
	return out
}

// walk reads the Change Log from the Tracked Resource Set back through
// every trs:previous, returning its events by URI and the segments read.
func (f *fixture) walk() (map[string]Event, []string) {
	f.t.Helper()
	c := &Client{}
	set, err := c.Read(context.Background(), f.url("/trs"))
	if err != nil {
		f.t.Fatal(err)
	}
	evs := map[string]Event{}
	segs := []string{f.url("/trs")}
	seg := set.Log
	for {
		for _, e := range seg.Events {
			if _, dup := evs[e.URI]; dup {
				f.t.Errorf("event %s listed twice", e.URI)
			}
			evs[e.URI] = e
		}
		if seg.Previous == "" {
			return evs, segs
		}
		segs = append(segs, seg.Previous)
		if seg, err = c.Segment(context.Background(), seg.Previous); err != nil {
			f.t.Fatal(err)
		}
	}
}

// members reads every page of the Base.
func (f *fixture) members() (members []string, cutoff string, pages []string) {
	f.t.Helper()
	c := &Client{}
	cutoff, err := c.Base(context.Background(), f.url("/trs/base"), func(p BasePage) error {
		members = append(members, p.Members...)
		pages = append(pages, p.URL)
		return nil
	})
	if err != nil {
		f.t.Fatal(err)
	}
	sort.Strings(members)
	return members, cutoff, pages
}

func byOrder(evs map[string]Event) []Event {
	var out []Event
	for _, e := range evs {
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Order < out[j].Order })
	return out
}

// since is what a client takes from the Change Log of set after point:
// the events Walk hands on with a greater order than point's, oldest
// first.
func since(ctx context.Context, c *Client, set *Set, point string) ([]Event, error) {
	var evs []Event
	at, err := c.Walk(ctx, set, point, func(e Event) error {
		evs = append(evs, e)
		return nil
	})
	if err != nil {
		return nil, err
	}
	var out []Event
	for _, e := range evs {
		if e.Order > at {
			out = append(out, e)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Order < out[j].Order })
	return out, nil
}
