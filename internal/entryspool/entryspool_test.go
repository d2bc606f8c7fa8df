package entryspool

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rsdump/rsdump/internal/extsort"
	"github.com/rsdump/rsdump/resourcesync"
)

// sample decodes a manifest that uses every field the spool keeps: times
// in several zones, lengths, hashes, links, a deletion.
func sample(t *testing.T) []resourcesync.URL {
	t.Helper()
	const doc = `<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/">
  <rs:md capability="changedump-manifest" from="2026-01-01T00:00:00Z" until="2026-01-02T00:00:00Z"/>
  <url>
    <loc>http://127.0.0.1:1/a/one.txt</loc>
    <lastmod>2026-01-01T10:00:00+05:30</lastmod>
    <changefreq>daily</changefreq>
    <rs:md change="created" hash="md5:1e0bd5d7a3e89b8b5df37ac0f7d6f0ac sha-256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08" length="41" path="/resources/a/one.txt" type="text/plain" encoding="gzip" datetime="2026-01-01T10:00:01.123456789Z"/>
    <rs:ln rel="duplicate" href="http://127.0.0.1:2/a/one.txt" pri="2" hash="md5:1e0bd5d7a3e89b8b5df37ac0f7d6f0ac" length="41" modified="2026-01-01T09:00:00-08:00" path="/x" type="text/plain" encoding="br"/>
    <rs:ln rel="describedby" href="http://127.0.0.1:2/a/meta"/>
  </url>
  <url>
    <loc>http://127.0.0.1:1/a/gone.txt</loc>
    <rs:md change="deleted"/>
  </url>
  <url><loc>http://127.0.0.1:1/a/bare</loc></url>
  <url>
    <loc>http://127.0.0.1:1/a/empty.txt</loc>
    <lastmod>2026-01-01T11:00:00Z</lastmod>
    <rs:md length="0" hash="md5:d41d8cd98f00b204e9800998ecf8427e" path="/resources/a/empty.txt"/>
  </url>
</urlset>`
	d, err := resourcesync.NewDecoder(strings.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	var out []resourcesync.URL
	for {
		u, err := d.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, u)
	}
}

func write(t *testing.T, dir string, urls []resourcesync.URL) string {
	t.Helper()
	w, err := Create[resourcesync.URL](dir, "spool-*.tmp")
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range urls {
		w.Add(u)
	}
	if err := w.Close(src); err != nil {
		t.Fatal(err)
	}
	return w.Name()
}

var src = Source{1, 2, 3}

func readAll(name string) ([]resourcesync.URL, error) {
	r, err := Open[resourcesync.URL](name, src)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	var out []resourcesync.URL
	for {
		u, err := r.Next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, u)
	}
}

// sameURLs compares entries field by field, times as written in a
// document (instant and zone offset): a zone read back is an equal zone,
// not the same pointer.
func sameURLs(t *testing.T, got, want []resourcesync.URL) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d entries read back, %d written", len(got), len(want))
	}
	for i := range want {
		g, gt := timesOut(got[i])
		w, wt := timesOut(want[i])
		if !reflect.DeepEqual(g, w) || !reflect.DeepEqual(gt, wt) {
			t.Errorf("entry %d read back as\n%+v %v\nwritten\n%+v %v", i+1, g, gt, w, wt)
		}
	}
}

// timesOut returns a copy of u with its times zeroed, and the times.
func timesOut(u resourcesync.URL) (resourcesync.URL, []string) {
	var ts []string
	walkTimes(&u, func(tm *time.Time) {
		ts = append(ts, tm.Format(time.RFC3339Nano))
		*tm = time.Time{}
	})
	return u, ts
}

func walkTimes(u *resourcesync.URL, f func(*time.Time)) {
	f(&u.Lastmod)
	if u.MD != nil {
		m := *u.MD
		u.MD = &m
		for _, t := range []*time.Time{&m.At, &m.Completed, &m.From, &m.Until, &m.Datetime} {
			f(t)
		}
	}
	links := append([]resourcesync.Link(nil), u.Links...)
	u.Links = links
	for i := range links {
		f(&links[i].Modified)
	}
}

func TestRoundTrip(t *testing.T) {
	t.Parallel()
	want := sample(t)
	got, err := readAll(write(t, t.TempDir(), want))
	if err != nil {
		t.Fatal(err)
	}
	sameURLs(t, got, want)
	if got[1].MD == nil || got[2].MD != nil || got[3].MD.Length == nil || *got[3].MD.Length != 0 {
		t.Errorf("absent and zero fields not kept apart: %+v %+v %+v", got[1].MD, got[2].MD, got[3].MD)
	}
}

// TestZones keeps a time's zone offset and its nanoseconds, whatever made
// the URL (the decoder gives UTC).
func TestZones(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 1, 1, 10, 0, 0, 123456789, time.FixedZone("", 5*3600+30*60))
	want := []resourcesync.URL{{Loc: "http://127.0.0.1:1/z", Lastmod: at, MD: &resourcesync.MD{Datetime: at.In(time.FixedZone("", -8*3600))}}}
	got, err := readAll(write(t, t.TempDir(), want))
	if err != nil {
		t.Fatal(err)
	}
	sameURLs(t, got, want)
	if s := got[0].Lastmod.Format(time.RFC3339Nano); s != "2026-01-01T10:00:00.123456789+05:30" {
		t.Errorf("lastmod read back as %s", s)
	}
}

func TestEmpty(t *testing.T) {
	t.Parallel()
	got, err := readAll(write(t, t.TempDir(), nil))
	if err != nil || len(got) != 0 {
		t.Fatalf("empty spool read back as %d entries, %v", len(got), err)
	}
}

// TestDamaged cuts the spool at every length and flips every byte: each
// read must end in an error that says the spool is damaged, never in
// io.EOF after fewer or different entries.
func TestDamaged(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	want := sample(t)
	name := write(t, dir, want)
	good, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "bad")
	try := func(what string, b []byte) {
		if err := os.WriteFile(bad, b, 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := readAll(bad)
		if err == nil {
			t.Fatalf("%s: read %d entries without an error", what, len(got))
		}
		if !errors.Is(err, ErrDamaged) && !errors.Is(err, ErrOtherSource) || !strings.Contains(err.Error(), bad) {
			t.Fatalf("%s: error %q does not name the damaged spool", what, err)
		}
	}
	for n := range len(good) {
		try(fmt.Sprintf("cut at %d", n), good[:n])
	}
	for i := range good {
		b := append([]byte(nil), good...)
		b[i] ^= 0x20
		try(fmt.Sprintf("byte flipped at %d", i), b)
	}
	try("extra byte", append(append([]byte(nil), good...), 0))
}

// TestOtherSource refuses, at Open, a spool made from other bytes.
func TestOtherSource(t *testing.T) {
	t.Parallel()
	name := write(t, t.TempDir(), sample(t))
	r, err := Open[resourcesync.URL](name, Source{9})
	if !errors.Is(err, ErrOtherSource) || !strings.Contains(err.Error(), name) {
		t.Fatalf("Open of another source's spool: %v, %v", r, err)
	}
}

func TestCloseRemovesOnError(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	w, err := Create[resourcesync.URL](dir, "spool-*.tmp")
	if err != nil {
		t.Fatal(err)
	}
	w.Add(resourcesync.URL{Loc: strings.Repeat("x", maxRecord+1)})
	if err := w.Close(src); err == nil {
		t.Fatal("an entry larger than a record was spooled")
	}
	if _, err := os.Stat(w.Name()); !os.IsNotExist(err) {
		t.Fatalf("the failed spool is still there: %v", err)
	}
}

// TestCodec: entries sorted by an external sort through Codec come back
// whole (every field, times with their zones) in <loc> order, with the
// entries held in run files; a run cut inside an entry is an error.
func TestCodec(t *testing.T) {
	t.Parallel()
	want := sample(t)
	dir := t.TempDir()
	s := extsort.New(dir, "run-*", 1, func(a, b *resourcesync.URL) int { return strings.Compare(a.Loc, b.Loc) }, Codec[resourcesync.URL]())
	defer s.Close()
	for i := len(want) - 1; i >= 0; i-- {
		if err := s.Add(want[i]); err != nil {
			t.Fatal(err)
		}
	}
	if s.Runs() < 2 {
		t.Fatalf("%d runs", s.Runs())
	}
	src, err := s.Sorted()
	if err != nil {
		t.Fatal(err)
	}
	var got []resourcesync.URL
	for {
		u, ok, err := src.Next()
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		got = append(got, u)
	}
	slices.SortFunc(want, func(a, b resourcesync.URL) int { return strings.Compare(a.Loc, b.Loc) })
	sameURLs(t, got, want)
	b := Codec[resourcesync.URL]().Append(nil, &want[0])
	if _, err := Codec[resourcesync.URL]().Read(bufio.NewReader(bytes.NewReader(b[:len(b)-1]))); err == nil || err == io.EOF {
		t.Errorf("a cut record read as %v", err)
	}
	if _, err := Codec[resourcesync.URL]().Read(bufio.NewReader(bytes.NewReader(nil))); err != io.EOF {
		t.Errorf("the end of a run read as %v", err)
	}
}
