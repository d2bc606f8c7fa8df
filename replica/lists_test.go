package replica_test

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rsdump/rsdump/deststate"
	"github.com/rsdump/rsdump/finding"
	"github.com/rsdump/rsdump/internal/httpc/httpctest"
	"github.com/rsdump/rsdump/internal/verifytest"
	"github.com/rsdump/rsdump/replica"
	"github.com/rsdump/rsdump/resourcesync"
	"github.com/rsdump/rsdump/transfer"
)

// TestFailedResourceLeavesNoDirectory: a resource that 404s, or whose
// bytes fail their hash, leaves no directory behind in the tree, also
// where it shares a new directory with a resource that lands (which
// moves that directory into the tree whole).
func TestFailedResourceLeavesNoDirectory(t *testing.T) {
	t.Parallel()
	s := newSource(t, map[string]string{
		"a/ok.txt":         "lands",
		"a/b/gone.txt":     "404",
		"a/c/d/bad.txt":    "fails its hash",
		"e/f/only-one.txt": "404 alone",
	})
	s.publishResources()
	res := filepath.Join(s.out, "res")
	os.Remove(filepath.Join(res, "a", "b", "gone.txt"))
	os.Remove(filepath.Join(res, "e", "f", "only-one.txt"))
	os.WriteFile(filepath.Join(res, "a", "c", "d", "bad.txt"), []byte("fails its HASH"), 0o644)
	dst := t.TempDir()
	r, fs, _ := syncRun(t, s.srv.URL+"/resourcelist.xml", dst, replica.Options{})
	if r.Written != 1 || r.Refused != 3 || !hasFinding(fs, finding.Error, finding.CheckHash) {
		t.Fatalf("%+v\n%s", r, problems(fs))
	}
	if got, want := dirsUnder(t, dst), []string{"a"}; !slices.Equal(got, want) {
		t.Errorf("directories in the tree: %v, want %v", got, want)
	}
}

// dirsUnder lists the directories under dir but rsdump's own.
func dirsUnder(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		switch {
		case !d.IsDir() || rel == ".":
		case rel == deststate.DirName:
			return filepath.SkipDir
		default:
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}

// dripOptions hold documents and resources to 100 B/s over 2 s; a byte a
// second never reaches their 2 s stall timeout.
var dripOptions = replica.Options{Transfer: transfer.Options{StallTimeout: 2 * time.Second, MinSpeed: 100, MinSpeedWindow: 2 * time.Second}}

// dripLimit is the longest a sync may take to give up on a drip: the
// stall timeout plus the speed window, and slack for a loaded machine.
const dripLimit = 2*time.Second + 2*time.Second + 4*time.Second

// dripping serves the Source's path drip one byte a second while on.
func dripping(s *source, drip string, on *atomic.Bool) {
	s.handler = func(h http.Handler) http.Handler {
		dripped := httpctest.DripPath(h, drip, time.Second)
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if on.Load() {
				dripped.ServeHTTP(w, r)
			} else {
				h.ServeHTTP(w, r)
			}
		})
	}
}

// syncWithin runs a sync that must end within limit (the test's own
// bound is a few times that).
func syncWithin(t *testing.T, src, dir string, o replica.Options, limit time.Duration) (*replica.Result, []finding.Finding, error) {
	t.Helper()
	var fs []finding.Finding
	o.Events = finding.OnFindings(func(f finding.Finding) { fs = append(fs, f) })
	ctx, cancel := context.WithTimeout(t.Context(), 3*limit)
	defer cancel()
	start := time.Now()
	res, err := replica.Sync(ctx, location(t, src), dir, o)
	if el := time.Since(start); el > limit {
		t.Errorf("sync took %s, want at most %s (%v)", el.Round(time.Millisecond), limit, err)
	}
	return res, fs, err
}

// TestDrippingResource: a resource that drips a byte a second is refused
// within about the stall timeout plus the speed window, by a finding
// naming its URL; the run ends and releases the tree, and the next sync
// starts at once and completes.
func TestDrippingResource(t *testing.T) {
	t.Parallel()
	s := newSource(t, files(3, 600))
	s.publishResources()
	var on atomic.Bool
	on.Store(true)
	dripping(s, "/res/d1/f001.txt", &on)
	dst := t.TempDir()
	res, fs, err := syncWithin(t, s.srv.URL+"/resourcelist.xml", dst, dripOptions, dripLimit)
	if err != nil {
		t.Fatal(err)
	}
	u := s.base + "d1/f001.txt"
	if res.Written != 2 || res.Refused != 1 || !findingNames(t, fs, u, "minimum speed") {
		t.Fatalf("%+v: want a finding naming %s and its speed\n%s", res, u, problems(fs))
	}
	on.Store(false)
	res, fs, err = syncWithin(t, "", dst, dripOptions, dripLimit)
	if err != nil || res.Problems() != 0 {
		t.Fatalf("the next sync: %v %+v\n%s", err, res, problems(fs))
	}
	sameTree(t, dst, s.files)
}

// TestDrippingChangeList: a Change List that drips a byte a second fails
// the sync within about the stall timeout plus the speed window, with an
// error naming it; the next sync starts at once and applies it.
func TestDrippingChangeList(t *testing.T) {
	t.Parallel()
	s := newSource(t, files(3, 100))
	s.publishResources()
	dst := t.TempDir()
	syncRun(t, s.srv.URL+"/capabilitylist.xml", dst, replica.Options{})
	c := s.changeSet(t0.Add(time.Hour), change{"d0/f000.txt", "changed", resourcesync.ChangeUpdated})
	s.changeList(t0, t0.Add(2*time.Hour), c)
	var on atomic.Bool
	on.Store(true)
	dripping(s, "/changelist.xml", &on)
	_, _, err := syncWithin(t, "", dst, dripOptions, dripLimit)
	t.Log(err)
	u := s.srv.URL + "/changelist.xml"
	if err == nil || !strings.Contains(err.Error(), u) || !strings.Contains(err.Error(), "minimum speed") {
		t.Fatalf("err %v, want one naming %s and its speed", err, u)
	}
	on.Store(false)
	res, fs, err := syncWithin(t, "", dst, dripOptions, dripLimit)
	if err != nil || res.Problems() != 0 || res.Written != 1 {
		t.Fatalf("the next sync: %v %+v\n%s", err, res, problems(fs))
	}
	sameTree(t, dst, s.files)
}

// findingNames says whether an error finding's message, as a problem
// line shows it, names url and says what.
func findingNames(t *testing.T, fs []finding.Finding, url, what string) bool {
	for _, f := range fs {
		if f.Severity == finding.Error && strings.Contains(f.Msg, url) && strings.Contains(f.Msg, what) {
			t.Log(f)
			return true
		}
	}
	return false
}

// TestResourceLengthCaps: a resource whose entry gives no length is cut
// off at MaxResourceSize, one that gives a length at that length, each
// refused by a finding naming its URL, however much more its server would
// send; a resource within its cap lands.
func TestResourceLengthCaps(t *testing.T) {
	t.Parallel()
	s := newSource(t, map[string]string{})
	s.handler = func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch r.URL.Path {
			case "/res/endless.txt", "/res/long.txt":
				endless(w, r) // chunked: no Content-Length gives it away
			case "/res/declared.txt":
				w.Header().Set("Content-Length", strconv.Itoa(64<<20))
				endless(w, r)
			default:
				h.ServeHTTP(w, r)
			}
		})
	}
	fine := "within its cap"
	verifytest.WriteFiles(t, filepath.Join(s.out, "res"), map[string]string{"fine.txt": fine})
	entry := func(rel, hash string, length *int64) resourcesync.URL {
		return resourcesync.URL{Loc: s.base + rel, MD: &resourcesync.MD{Hash: "sha-256:" + hash, Length: length}}
	}
	zero := verifytest.SHA256(nil)
	urls := []resourcesync.URL{entry("endless.txt", zero, nil), entry("declared.txt", zero, nil),
		entry("long.txt", zero, resourcesync.Int64(5)), entry("fine.txt", verifytest.SHA256([]byte(fine)), nil)}
	verifytest.WriteDoc(t, filepath.Join(s.out, "resourcelist.xml"),
		resourcesync.Header{Kind: resourcesync.URLSet, MD: resourcesync.MD{Capability: resourcesync.CapResourceList, At: t0}}, urls)
	o := replica.Options{MaxResourceSize: 1 << 20}
	res, fs, err := syncWithin(t, s.srv.URL+"/resourcelist.xml", t.TempDir(), o, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if res.Written != 1 || res.Refused != 3 {
		t.Fatalf("%+v\n%s", res, problems(fs))
	}
	for _, rel := range []string{"endless.txt", "declared.txt", "long.txt"} {
		if !findingNames(t, fs, s.base+rel, "more than") {
			t.Errorf("no length finding naming %s\n%s", s.base+rel, problems(fs))
		}
	}
}

// endless answers with 'x's until the client goes away, or 256 MiB.
func endless(w http.ResponseWriter, r *http.Request) {
	buf := bytes.Repeat([]byte("x"), 64<<10)
	for range 4096 {
		if _, err := w.Write(buf); err != nil || r.Context().Err() != nil {
			return
		}
	}
}

// publishIndex writes name.xml, an index of the capability over one part
// per slice of entries (name-partN.xml), and lists it in the Capability
// List.
func (s *source) publishIndex(name string, md resourcesync.MD, parts ...[]resourcesync.URL) {
	t := s.t
	var locs []resourcesync.URL
	for i, p := range parts {
		part := fmt.Sprintf("%s-part%05d.xml", name, i+1)
		verifytest.WriteDoc(t, filepath.Join(s.out, part), resourcesync.Header{Kind: resourcesync.URLSet, MD: md}, p)
		locs = append(locs, resourcesync.URL{Loc: s.srv.URL + "/" + part})
	}
	verifytest.WriteDoc(t, filepath.Join(s.out, name+".xml"), resourcesync.Header{Kind: resourcesync.SitemapIndex, MD: md}, locs)
	s.caps[md.Capability] = "/" + name + ".xml"
	s.publish()
}

// entryFor is the list entry of the Source's file rel with content data
// (change: "" in a Resource List).
func (s *source) entryFor(rel, data, change string, at time.Time) resourcesync.URL {
	md := &resourcesync.MD{Change: change, Datetime: at}
	if change != resourcesync.ChangeDeleted {
		md.Hash, md.Length = "sha-256:"+verifytest.SHA256([]byte(data)), resourcesync.Int64(int64(len(data)))
	}
	return resourcesync.URL{Loc: s.base + rel, Lastmod: at, MD: md}
}

// TestChangeListLastChangeWinsAcrossParts: of the changes of one resource
// in different parts of a Change List index, only the last applies: the
// earlier versions, which the Source no longer serves, are not fetched.
func TestChangeListLastChangeWinsAcrossParts(t *testing.T) {
	t.Parallel()
	s := newSource(t, map[string]string{"x.txt": "x0", "y.txt": "y0", "z.txt": "z0"})
	s.publishResources()
	dst := t.TempDir()
	syncRun(t, s.srv.URL+"/capabilitylist.xml", dst, replica.Options{})
	at := func(h int) time.Time { return t0.Add(time.Duration(h) * time.Hour) }
	part1 := []resourcesync.URL{
		s.entryFor("x.txt", "x1", resourcesync.ChangeUpdated, at(1)),
		s.entryFor("y.txt", "y1", resourcesync.ChangeUpdated, at(1)),
		s.entryFor("z.txt", "z1", resourcesync.ChangeUpdated, at(1)),
	}
	part2 := []resourcesync.URL{
		s.entryFor("x.txt", "x2", resourcesync.ChangeUpdated, at(2)),
		s.entryFor("z.txt", "", resourcesync.ChangeDeleted, at(2)),
	}
	s.files = map[string]string{"x.txt": "x2", "y.txt": "y1"}
	res := filepath.Join(s.out, "res")
	os.RemoveAll(res)
	verifytest.WriteFiles(t, res, s.files)
	s.publishIndex("changelist", resourcesync.MD{Capability: resourcesync.CapChangeList, From: t0, Until: at(3)}, part1, part2)
	r, fs, _ := syncRun(t, "", dst, replica.Options{})
	if r.Problems() != 0 || r.Written != 2 || r.Deleted != 1 {
		t.Fatalf("%+v\n%s", r, problems(fs))
	}
	sameTree(t, dst, s.files)
	if !r.Until.Equal(at(3)) {
		t.Errorf("until %v, want %v", r.Until, at(3))
	}
}

// TestResourceListTargetTwiceAcrossParts: a Resource List index that
// lists one resource in two parts has the second refused, naming the
// first, as within one document.
func TestResourceListTargetTwiceAcrossParts(t *testing.T) {
	t.Parallel()
	s := newSource(t, map[string]string{"a.txt": "a", "b.txt": "b"})
	verifytest.WriteFiles(t, filepath.Join(s.out, "res"), s.files)
	part1 := []resourcesync.URL{s.entryFor("a.txt", "a", "", t0), s.entryFor("b.txt", "b", "", t0)}
	part2 := []resourcesync.URL{s.entryFor("a.txt", "a", "", t0)}
	s.publishIndex("resourcelist", resourcesync.MD{Capability: resourcesync.CapResourceList, At: t0}, part1, part2)
	dst := t.TempDir()
	r, fs, _ := syncRun(t, s.srv.URL+"/resourcelist.xml", dst, replica.Options{})
	first := s.srv.URL + "/resourcelist-part00001.xml"
	if r.Written != 2 || r.Refused != 1 || !findingNames(t, fs, first, "entry 1 lands on the same file as entry 1 of") {
		t.Fatalf("%+v, want the second a.txt refused naming entry 1 of %s\n%s", r, first, problems(fs))
	}
	if st, _ := deststate.Read(dst); !st.Since().IsZero() {
		t.Errorf("the state records a list with a refused entry as applied: %+v", st)
	}
}
