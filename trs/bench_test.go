package trs

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rsdump/rsdump/resourcesync"
)

// BenchmarkChangeLog100k serves a Tracked Resource Set over two Change
// Lists of 50,000 entries each: the set (its newest segment kept with
// the view), an old segment (the Change Log read again), and a Base page.
func BenchmarkChangeLog100k(b *testing.B) {
	t := &testing.T{}
	dir := b.TempDir()
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var names []string
	for part := range 2 {
		name := fmt.Sprintf("changelist-%d.xml", part)
		names = append(names, name)
		f, _ := os.Create(filepath.Join(dir, name))
		enc, _ := resourcesync.NewEncoder(f, resourcesync.Header{Kind: resourcesync.URLSet, MD: resourcesync.MD{Capability: resourcesync.CapChangeList, From: at}})
		for i := range resourcesync.MaxEntries {
			n := part*resourcesync.MaxEntries + i
			enc.Encode(resourcesync.URL{Loc: fmt.Sprintf("%sf%06d", fixtureBase, n%5000), MD: &resourcesync.MD{Change: resourcesync.ChangeUpdated, Datetime: at.Add(time.Duration(n) * time.Second), Hash: "sha-256:00", Length: resourcesync.Int64(1)}})
		}
		enc.Close()
		f.Close()
	}
	f, _ := os.Create(filepath.Join(dir, CapabilityListName))
	enc, _ := resourcesync.NewEncoder(f, resourcesync.Header{Kind: resourcesync.URLSet, MD: resourcesync.MD{Capability: resourcesync.CapCapabilityList}})
	for _, n := range names {
		enc.Encode(resourcesync.URL{Loc: fixtureDump + n, MD: &resourcesync.MD{Capability: resourcesync.CapChangeList}})
	}
	enc.Close()
	f.Close()
	root, _ := os.OpenRoot(dir)
	defer root.Close()
	h, _ := New(Options{Path: "/trs", Open: func(name string) (*os.File, os.FileInfo, error) {
		f, err := root.Open(name)
		if err != nil {
			return nil, nil, err
		}
		fi, err := f.Stat()
		return f, fi, err
	}})
	get := func(path string) {
		req, _ := http.NewRequest(http.MethodGet, "http://127.0.0.1"+path, nil)
		w := &discard{h: http.Header{}}
		h.ServeHTTP(w, req)
		if w.code != 0 && w.code != http.StatusOK {
			t.Errorf("%s: %d", path, w.code)
		}
	}
	b.Run("first", func(b *testing.B) {
		for b.Loop() {
			h.v = nil // the view computed again, as after a pack
			get("/trs")
		}
	})
	b.Run("set", func(b *testing.B) {
		for b.Loop() {
			get("/trs")
		}
	})
	b.Run("segment-99-of-100", func(b *testing.B) {
		for b.Loop() {
			get("/trs/changelog/99")
		}
	})
}

type discard struct {
	h    http.Header
	code int
}

func (d *discard) Header() http.Header         { return d.h }
func (d *discard) Write(p []byte) (int, error) { return len(p), nil }
func (d *discard) WriteHeader(c int)           { d.code = c }
