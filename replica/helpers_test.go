package replica_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rsdump/rsdump/finding"
	"github.com/rsdump/rsdump/internal/verifytest"
	"github.com/rsdump/rsdump/layout"
	"github.com/rsdump/rsdump/pack"
	"github.com/rsdump/rsdump/replica"
	"github.com/rsdump/rsdump/resourcesync"
)

// source is a Source published on a loopback server: the pack output at
// its root, the resources themselves under /res/ (the base URL), a
// Capability List and a Source Description at /.well-known/resourcesync.
type source struct {
	t     testing.TB
	srv   *httptest.Server
	out   string            // what the server serves
	files map[string]string // the Source's tree now
	at    time.Time         // of the last snapshot
	base  string
	caps  map[string]string // capability → URL path, for the Capability List
	// handler wraps the file server, to add faults or headers.
	handler func(http.Handler) http.Handler
}

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func newSource(t testing.TB, files map[string]string) *source {
	s := &source{t: t, out: t.TempDir(), files: files, at: t0, caps: map[string]string{}}
	fsrv := http.FileServer(http.Dir(s.out))
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := http.Handler(fsrv)
		if s.handler != nil {
			h = s.handler(h)
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(s.srv.Close)
	s.base = s.srv.URL + "/res/"
	return s
}

// packDump packs the tree as a Resource Dump with the given pack options
// (mirrors, say) and lists it.
func (s *source) packDump(o pack.Options) {
	t := s.t
	tree := verifytest.Tree(t, s.files)
	o.BaseURL, o.At = s.base, s.at
	if o.DumpURL == "" {
		o.DumpURL = s.srv.URL + "/"
	}
	o.Prune = true
	if _, err := pack.Pack(context.Background(), tree, s.out, o); err != nil {
		t.Fatal(err)
	}
	s.caps[resourcesync.CapResourceDump] = "/" + layout.DumpName
	s.publish()
}

// publishResources writes the tree under /res/ and a Resource List of it.
func (s *source) publishResources() {
	t := s.t
	res := filepath.Join(s.out, "res")
	os.RemoveAll(res)
	verifytest.WriteFiles(t, res, s.files)
	var urls []resourcesync.URL
	for _, rel := range sortedKeys(s.files) {
		d := []byte(s.files[rel])
		urls = append(urls, resourcesync.URL{Loc: s.base + rel, Lastmod: verifytest.Time,
			MD: &resourcesync.MD{Hash: "sha-256:" + verifytest.SHA256(d), Length: resourcesync.Int64(int64(len(d)))}})
	}
	md := resourcesync.MD{Capability: resourcesync.CapResourceList, At: s.at, Completed: s.at}
	verifytest.WriteDoc(t, filepath.Join(s.out, "resourcelist.xml"), resourcesync.Header{Kind: resourcesync.URLSet, MD: md}, urls)
	s.caps[resourcesync.CapResourceList] = "/resourcelist.xml"
	s.publish()
}

// change is one change of the Source: data "" with deleted.
type change struct {
	rel, data, kind string
}

// changeSet applies changes to the tree at time at and returns them as
// Change Dump / Change List entries.
func (s *source) changeSet(at time.Time, cs ...change) []verifytest.File {
	var out []verifytest.File
	for i, c := range cs {
		lm := at.Add(time.Duration(i+1) * time.Second)
		out = append(out, verifytest.File{Rel: c.rel, Data: c.data, Change: c.kind, Lastmod: lm, Loc: s.base + c.rel})
		if c.kind == resourcesync.ChangeDeleted {
			delete(s.files, c.rel)
		} else {
			s.files[c.rel] = c.data
		}
	}
	return out
}

// changeDump publishes packages of changes as changedump.xml, each
// package covering [from, until].
func (s *source) changeDump(pkgs []verifytest.ChangePackage) {
	t := s.t
	var urls []resourcesync.URL
	for i, p := range pkgs {
		name := fmt.Sprintf("changedump-%05d", i+1)
		z, m := verifytest.ChangeZip(t, p)
		write(t, filepath.Join(s.out, name+".zip"), z)
		write(t, filepath.Join(s.out, name+".manifest.xml"), m)
		urls = append(urls, resourcesync.URL{Loc: s.srv.URL + "/" + name + ".zip",
			MD:    &resourcesync.MD{Type: "application/zip", Length: resourcesync.Int64(int64(len(z))), Hash: "sha-256:" + verifytest.SHA256(z), From: p.From, Until: p.Until},
			Links: []resourcesync.Link{{Rel: "contents", Href: s.srv.URL + "/" + name + ".manifest.xml", Type: "application/xml"}}})
	}
	md := resourcesync.MD{Capability: resourcesync.CapChangeDump, From: pkgs[0].From, Until: pkgs[len(pkgs)-1].Until}
	verifytest.WriteDoc(t, filepath.Join(s.out, "changedump.xml"), resourcesync.Header{Kind: resourcesync.URLSet, MD: md}, urls)
	s.caps[resourcesync.CapChangeDump] = "/changedump.xml"
	s.publish()
}

// changeList publishes changes as changelist.xml over [from, until], and
// the changed resources under /res/.
func (s *source) changeList(from, until time.Time, cs []verifytest.File) {
	t := s.t
	var urls []resourcesync.URL
	for _, c := range cs {
		urls = append(urls, verifytest.URLFor(c, ""))
		urls[len(urls)-1].MD.Path = ""
	}
	verifytest.WriteFiles(t, filepath.Join(s.out, "res"), s.files)
	for _, c := range cs {
		if c.Change == resourcesync.ChangeDeleted {
			os.Remove(filepath.Join(s.out, "res", filepath.FromSlash(c.Rel)))
		}
	}
	md := resourcesync.MD{Capability: resourcesync.CapChangeList, From: from, Until: until}
	verifytest.WriteDoc(t, filepath.Join(s.out, "changelist.xml"), resourcesync.Header{Kind: resourcesync.URLSet, MD: md}, urls)
	s.caps[resourcesync.CapChangeList] = "/changelist.xml"
	s.publish()
}

// publish writes the Capability List and the Source Description.
func (s *source) publish() {
	t := s.t
	var urls []resourcesync.URL
	for _, c := range []string{resourcesync.CapResourceList, resourcesync.CapResourceDump, resourcesync.CapChangeList, resourcesync.CapChangeDump} {
		if p, ok := s.caps[c]; ok {
			urls = append(urls, resourcesync.URL{Loc: s.srv.URL + p, MD: &resourcesync.MD{Capability: c}})
		}
	}
	up := []resourcesync.Link{{Rel: "up", Href: s.srv.URL + "/.well-known/resourcesync"}}
	verifytest.WriteDoc(t, filepath.Join(s.out, "capabilitylist.xml"),
		resourcesync.Header{Kind: resourcesync.URLSet, MD: resourcesync.MD{Capability: resourcesync.CapCapabilityList}, Links: up}, urls)
	desc := []resourcesync.URL{{Loc: s.srv.URL + "/capabilitylist.xml", MD: &resourcesync.MD{Capability: resourcesync.CapCapabilityList}}}
	os.MkdirAll(filepath.Join(s.out, ".well-known"), 0o755)
	verifytest.WriteDoc(t, filepath.Join(s.out, ".well-known", "resourcesync"),
		resourcesync.Header{Kind: resourcesync.URLSet, MD: resourcesync.MD{Capability: resourcesync.CapDescription}}, desc)
}

func write(t testing.TB, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// syncRun syncs and returns the result and the findings.
func syncRun(t testing.TB, src, dir string, o replica.Options) (*replica.Result, []finding.Finding, []string) {
	t.Helper()
	var fs []finding.Finding
	var notes []string
	o.Events = func(e finding.Event) {
		switch e := e.(type) {
		case finding.Finding:
			fs = append(fs, e)
		case finding.Note:
			notes = append(notes, e.Msg)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := replica.Sync(ctx, src, dir, o)
	if err != nil {
		t.Fatalf("Sync %s: %v\nnotes: %s\n%s", src, err, strings.Join(notes, "\n"), problems(fs))
	}
	return res, fs, notes
}

func problems(fs []finding.Finding) string {
	var b strings.Builder
	for _, f := range fs {
		if f.Severity != finding.OK {
			b.WriteString("  " + f.String() + "\n")
		}
	}
	return b.String()
}

// sameTree fails unless dir holds exactly the files, byte for byte.
func sameTree(t testing.TB, dir string, want map[string]string) {
	t.Helper()
	verifytest.SameFiles(t, dir, verifytest.ReadTree(t, dir), want)
}

func files(n, size int) map[string]string {
	out := map[string]string{}
	for i := range n {
		out[fmt.Sprintf("d%d/f%03d.txt", i%4, i)] = strings.Repeat(fmt.Sprintf("%d-", i), size/2+1)[:size]
	}
	return out
}

// sampleLiveHeap samples the live heap (a GC forced before each look:
// what is held, not garbage waiting to be collected) every interval,
// from now until the returned function is called; that returns how far
// above its level now the heap rose at most.
func sampleLiveHeap(every time.Duration) (peak func() uint64) {
	liveHeap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	base := liveHeap()
	var top atomic.Uint64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			select {
			case <-stop:
				return
			case <-time.After(every):
			}
			if h := liveHeap(); h > base && h-base > top.Load() {
				top.Store(h - base)
			}
		}
	}()
	return func() uint64 {
		close(stop)
		<-sampled
		return top.Load()
	}
}
