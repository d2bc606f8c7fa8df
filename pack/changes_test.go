package pack

import (
	"archive/zip"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rsdump/rsdump/deststate"
	"github.com/rsdump/rsdump/finding"
	"github.com/rsdump/rsdump/internal/sharedtest"
	"github.com/rsdump/rsdump/internal/unixnano"
	"github.com/rsdump/rsdump/internal/verifytest"
	"github.com/rsdump/rsdump/layout"
	"github.com/rsdump/rsdump/resourcesync"
	"github.com/rsdump/rsdump/unpack"
	"github.com/rsdump/rsdump/verify"
)

const chgBase = "http://127.0.0.1/rs/"

// hour is the pinned time of generation k: fixedTime plus k hours.
func hour(k int) time.Time { return fixedTime.Add(time.Duration(k) * time.Hour) }

func chgOptions(k int) Options {
	return Options{BaseURL: chgBase, At: hour(k), Changes: k > 0}
}

// put writes a file with the given mtime.
func put(t *testing.T, src, rel, data string, mtime time.Time) {
	t.Helper()
	p := filepath.Join(src, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(p, mtime, mtime); err != nil {
		t.Fatal(err)
	}
}

func packAt(t *testing.T, src, out string, o Options) *Result {
	t.Helper()
	res, err := Pack(context.Background(), src, out, o)
	if err != nil {
		t.Fatalf("Pack at %s: %v", resourcesync.FormatTime(o.At), err)
	}
	return res
}

// applyTo unpacks doc into dst and fails on any problem.
func applyTo(t *testing.T, doc, dst string) {
	t.Helper()
	m, err := deststate.NewMapper(deststate.ByURI, chgBase)
	if err != nil {
		t.Fatal(err)
	}
	var problems []string
	opts := unpack.Options{Mapper: m, Events: finding.OnFindings(func(f finding.Finding) {
		if f.Severity >= finding.Warning {
			problems = append(problems, f.String())
		}
	})}
	res, err := unpack.Unpack(context.Background(), doc, dst, opts)
	if err != nil || res.Problems() != 0 || len(problems) > 0 {
		t.Fatalf("unpack %s: %v %+v\n%s", doc, err, res, strings.Join(problems, "\n"))
	}
}

func sameTree(t *testing.T, what, got, want string) {
	t.Helper()
	verifytest.SameFiles(t, what, verifytest.ReadTree(t, got), verifytest.ReadTree(t, want))
}

// checkChangePackage checks a Change Dump package against its manifest:
// capability, interval, chronological order, every change's datetime in
// the interval, every bitstream present under /changes/ with distinct
// paths and the file's own time as its lastmod, no bitstream for a
// deletion. It returns the manifest's entries.
func checkChangePackage(t *testing.T, path string, from, until time.Time) []resourcesync.URL {
	t.Helper()
	zr, err := zip.OpenReader(path)
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	entries := map[string]bool{}
	for _, f := range zr.File {
		entries[f.Name] = true
	}
	h, urls := verifytest.ReadDoc(t, manifestPathFor(path))
	if h.MD.Capability != resourcesync.CapChangeDumpManifest || !h.MD.From.Equal(from) || !h.MD.Until.Equal(until) {
		t.Errorf("%s: manifest header %+v, want changedump-manifest from %s until %s", path, h.MD, from, until)
	}
	seen := map[string]bool{}
	var last time.Time
	for _, u := range urls {
		switch dt := u.MD.Datetime; {
		case dt.Before(last):
			t.Errorf("%s: %s at %s comes after a change at %s", path, u.Loc, dt, last)
		case !dt.After(from) || dt.After(until):
			t.Errorf("%s: %s at %s is outside (%s, %s]", path, u.Loc, dt, from, until)
		}
		last = u.MD.Datetime
		if u.MD.Change == resourcesync.ChangeDeleted {
			if u.MD.Path != "" || u.MD.Hash == "" {
				t.Errorf("%s: deletion of %s with path %q, hash %q", path, u.Loc, u.MD.Path, u.MD.Hash)
			}
			continue
		}
		if !strings.HasPrefix(u.MD.Path, "/changes/") || !entries[u.MD.Path[1:]] || seen[u.MD.Path] {
			t.Errorf("%s: %s has path %q: not under /changes/, not in the ZIP, or repeated", path, u.Loc, u.MD.Path)
		}
		seen[u.MD.Path] = true
		if f, err := zr.Open(u.MD.Path[1:]); err == nil {
			fi, _ := f.Stat()
			if !u.Lastmod.Equal(fi.ModTime()) {
				t.Errorf("%s: %s has lastmod %s, its bitstream's mtime is %s", path, u.Loc, u.Lastmod, fi.ModTime())
			}
			f.Close()
		}
	}
	xmllint(t, manifestPathFor(path), urlsetSchema)
	return urls
}

// TestChangesGenerations evolves a Source through generations of
// creations, updates, deletions, a rename, a file deleted then
// recreated, names with spaces and Unicode; after each, pack --changes
// is applied to a Destination restored from the initial dump, which must
// then equal the Source byte for byte. A second Destination applies the
// whole Change Dump at the end in one go: two runs' updates of one file.
func TestChangesGenerations(t *testing.T) {
	src, out, dst, late := t.TempDir(), t.TempDir(), t.TempDir(), t.TempDir()
	old := hour(0).Add(-time.Hour)
	for _, rel := range []string{"a.txt", "b c.txt", "ü/é.txt", "dir/d.txt", "gone.txt", "keep.txt", "old.txt"} {
		put(t, src, rel, "v0 of "+rel, old)
	}
	packAt(t, src, out, chgOptions(0))
	applyTo(t, filepath.Join(out, layout.DumpName), dst)
	applyTo(t, filepath.Join(out, layout.DumpName), late)
	sameTree(t, "initial", dst, src)

	gens := []func(k int){
		func(k int) { // update, delete, create with a space, rename (mtime kept)
			put(t, src, "a.txt", "a, first update", hour(k-1).Add(10*time.Minute))
			os.Remove(filepath.Join(src, "gone.txt"))
			put(t, src, "new file.txt", "created", hour(k-1).Add(20*time.Minute))
			os.Rename(filepath.Join(src, "dir", "d.txt"), filepath.Join(src, "dir", "e.txt"))
		},
		func(k int) { // a second update of a.txt, Unicode update, a deletion
			put(t, src, "a.txt", "a, second update!", hour(k-1).Add(5*time.Minute))
			put(t, src, "ü/é.txt", "é changed", hour(k-1).Add(6*time.Minute))
			os.Remove(filepath.Join(src, "old.txt"))
		},
		func(k int) { // deleted then recreated; a new directory
			put(t, src, "gone.txt", "back again", hour(k-1).Add(time.Minute))
			put(t, src, "sub dir/ñ.txt", "new in a new directory", hour(k-1).Add(2*time.Minute))
		},
	}
	prevUntil := hour(0)
	var npkgs int
	for i, gen := range gens {
		k := i + 1
		gen(k)
		res := packAt(t, src, out, chgOptions(k))
		if len(res.Packages) != 1 || !res.From.Equal(prevUntil) || !res.Packages[0].From.Equal(prevUntil) {
			t.Fatalf("generation %d: %d packages from %s, want 1 from the previous until %s", k, len(res.Packages), res.From, prevUntil)
		}
		p := res.Packages[0]
		checkChangePackage(t, filepath.Join(out, p.Name), p.From, p.Until)
		npkgs++
		// One Change Dump per run, named by the Change Dump Index.
		h, parts, urls := readIndexed(t, out, layout.ChangeDumpName)
		if h.MD.Capability != resourcesync.CapChangeDump || !h.MD.From.Equal(hour(0)) || len(urls) != npkgs || len(parts) != k {
			t.Fatalf("generation %d: changedump.xml %+v names %d documents listing %d packages, want from %s, %d and %d", k, h.MD, len(parts), len(urls), hour(0), k, npkgs)
		}
		prevUntil = p.Until
		applyTo(t, filepath.Join(out, layout.ChangeDumpName), dst)
		sameTree(t, "generation "+p.Name, dst, src)
		checkLists(t, out, dst, npkgs)
	}
	// Nothing changed: nothing is written, the Change Dump stays as it was.
	before := readFile(t, filepath.Join(out, layout.ChangeDumpName))
	if res := packAt(t, src, out, chgOptions(len(gens)+1)); len(res.Packages) != 0 || res.Created+res.Updated+res.Deleted != 0 {
		t.Errorf("a run with no change wrote %d packages (%+v)", len(res.Packages), res)
	}
	if string(readFile(t, filepath.Join(out, layout.ChangeDumpName))) != string(before) {
		t.Error("a run with no change rewrote changedump.xml")
	}
	applyTo(t, filepath.Join(out, layout.ChangeDumpName), late)
	sameTree(t, "whole Change Dump at once", late, src)
}

// checkLists: after a --changes run, resourcelist.xml describes the
// source now (the Destination audits clean against it), the Change Lists
// changelist.xml names have the Change Dump's entries in its order, one
// per run as the Change Dumps, and capabilitylist.xml names all four
// indexes and documents. Each validates against the schema.
func checkLists(t *testing.T, out, dst string, npkgs int) {
	t.Helper()
	m, _ := deststate.NewMapper(deststate.ByURI, chgBase)
	var bad []string
	sum, err := verify.Audit(context.Background(), dst, filepath.Join(out, layout.ResourceListName), m, verify.Options{Events: finding.OnFindings(func(f finding.Finding) {
		if f.Severity >= finding.Warning {
			bad = append(bad, f.String())
		}
	})})
	if err != nil || sum.Problems() != 0 || len(bad) > 0 {
		t.Errorf("verify --tree against resourcelist.xml: %v\n%s", err, strings.Join(bad, "\n"))
	}
	var want []resourcesync.URL
	_, dumps, pkgs := readIndexed(t, out, layout.ChangeDumpName)
	for _, p := range pkgs {
		ln, _ := p.Link("contents")
		_, urls := verifytest.ReadDoc(t, filepath.Join(out, resourcesync.BaseName(ln.Href)))
		want = append(want, urls...)
	}
	h, lists, got := readIndexed(t, out, layout.ChangeListName)
	if h.MD.Capability != resourcesync.CapChangeList || len(got) != len(want) || len(pkgs) != npkgs || len(lists) != len(dumps) {
		t.Fatalf("changelist.xml: %+v naming %d lists with %d entries, want %d lists, %d entries (%d packages)", h.MD, len(lists), len(got), len(dumps), len(want), len(pkgs))
	}
	for i := range lists {
		if !lists[i].MD.From.Equal(dumps[i].MD.From) || !lists[i].MD.Until.Equal(dumps[i].MD.Until) {
			t.Errorf("Change List %d covers %+v, its run's Change Dump %+v", i+1, lists[i].MD, dumps[i].MD)
		}
	}
	for i := range want {
		if got[i].Loc != want[i].Loc || !got[i].Lastmod.Equal(want[i].Lastmod) || !got[i].MD.Datetime.Equal(want[i].MD.Datetime) ||
			got[i].MD.Change != want[i].MD.Change || got[i].MD.Hash != want[i].MD.Hash {
			t.Errorf("changelist.xml entry %d: %+v, want %+v", i+1, got[i], want[i])
		}
	}
	_, caps := verifytest.ReadDoc(t, filepath.Join(out, layout.CapabilityListName))
	if len(caps) != 4 {
		t.Errorf("capabilitylist.xml names %d documents, want 4", len(caps))
	}
	for _, f := range []string{layout.ResourceListName, layout.CapabilityListName} {
		xmllint(t, filepath.Join(out, f), urlsetSchema)
	}
}

// TestChangesEntryTimes: every change entry, in the manifest and in the
// Change List, carries the time of the change as its rs:md datetime and
// the resource's own time as its lastmod: a file copied in with an old
// mtime (cp -p) keeps that mtime, its change is placed at the run's time;
// a deletion has the deleted version's mtime, or no lastmod when the
// baseline does not know it. Both documents validate against the 1.1
// schema, and unpack applies them, giving the files their own times.
func TestChangesEntryTimes(t *testing.T) {
	src, out, dst := t.TempDir(), t.TempDir(), t.TempDir()
	put(t, src, "copied.txt", "v0", hour(-1))
	put(t, src, "edited.txt", "v0", hour(-1))
	put(t, src, "gone.txt", "v0", hour(-2))
	packAt(t, src, out, chgOptions(0))
	applyTo(t, filepath.Join(out, layout.DumpName), dst)
	put(t, src, "copied.txt", "copied in, with its old mtime", hour(-5))
	put(t, src, "edited.txt", "edited", hour(0).Add(10*time.Minute))
	put(t, src, "new.txt", "created", hour(0).Add(20*time.Minute))
	os.Remove(filepath.Join(src, "gone.txt"))
	list := filepath.Join(t.TempDir(), "list.xml") // the baseline, as a Resource List that gives no lastmod
	verifytest.WriteDoc(t, list, resourcesync.Header{MD: resourcesync.MD{Capability: resourcesync.CapResourceList, At: hour(0)}},
		[]resourcesync.URL{{Loc: chgBase + "gone.txt", MD: &resourcesync.MD{Length: resourcesync.Int64(2)}}})

	type times struct{ lastmod, datetime time.Time }
	want := map[string]times{
		"edited.txt": {hour(0).Add(10 * time.Minute), hour(0).Add(10 * time.Minute)},
		"new.txt":    {hour(0).Add(20 * time.Minute), hour(0).Add(20 * time.Minute)},
		"copied.txt": {hour(-5), hour(1)},
		"gone.txt":   {hour(-2), hour(1)},
	}
	order := []string{"edited.txt", "new.txt", "copied.txt", "gone.txt"}
	for _, since := range []string{"", list} {
		o := chgOptions(1)
		o.Since = since
		dir := copyDir(t, out)
		res := packAt(t, src, dir, o)
		if since != "" {
			want["gone.txt"] = times{datetime: hour(1)} // the other files, not in the list, are created alike
		}
		manifest := filepath.Join(dir, res.Packages[0].Manifest)
		_, _, listed := readIndexed(t, dir, layout.ChangeListName)
		for _, doc := range []string{manifest, filepath.Join(dir, layout.ChangeListName)} {
			_, urls := verifytest.ReadDoc(t, doc)
			if doc != manifest {
				urls = listed
			}
			var got []string
			for _, u := range urls {
				rel := strings.TrimPrefix(u.Loc, chgBase)
				got = append(got, rel)
				if w := want[rel]; !u.Lastmod.Equal(w.lastmod) || !u.MD.Datetime.Equal(w.datetime) {
					t.Errorf("since %q: %s: %s has lastmod %s, datetime %s; want %s, %s", since, filepath.Base(doc), rel,
						u.Lastmod, u.MD.Datetime, w.lastmod, w.datetime)
				}
			}
			if strings.Join(got, " ") != strings.Join(order, " ") {
				t.Errorf("since %q: %s lists %v, want %v", since, filepath.Base(doc), got, order)
			}
		}
		if since == "" {
			applyTo(t, filepath.Join(dir, layout.ChangeDumpName), dst)
			sameTree(t, "after the changes", dst, src)
			for rel, w := range want {
				if fi, err := os.Stat(filepath.Join(dst, rel)); err == nil && !fi.ModTime().Equal(w.lastmod) {
					t.Errorf("the Destination's %s has mtime %s, want the Source's %s", rel, fi.ModTime(), w.lastmod)
				}
			}
		}
	}
}

// TestChecksumFindsSameLengthAndMtime: a file rewritten with content of
// the same length and given its old mtime back is not seen without
// --checksum, which proves unchanged files are not read, and is seen
// with it.
func TestChecksumFindsSameLengthAndMtime(t *testing.T) {
	t.Parallel()
	src, out := t.TempDir(), t.TempDir()
	put(t, src, "f.txt", "AAAA", hour(-1))
	put(t, src, "g.txt", "same", hour(-1))
	packAt(t, src, out, chgOptions(0))
	put(t, src, "f.txt", "BBBB", hour(-1))
	if res := packAt(t, src, out, chgOptions(1)); res.Updated != 0 || len(res.Packages) != 0 {
		t.Fatalf("without --checksum: %d updated, want 0", res.Updated)
	}
	o := chgOptions(1)
	o.Checksum = true
	res := packAt(t, src, out, o)
	if res.Updated != 1 || res.Created+res.Deleted != 0 || len(res.Packages) != 1 {
		t.Fatalf("with --checksum: %+v, want f.txt updated", res)
	}
	urls := checkChangePackage(t, filepath.Join(out, res.Packages[0].Name), hour(0), res.Packages[0].Until)
	if len(urls) != 1 || urls[0].Loc != chgBase+"f.txt" || urls[0].MD.Change != resourcesync.ChangeUpdated {
		t.Errorf("entries %+v, want f.txt updated", urls)
	}
}

// TestChangesBaselineKinds: every kind of baseline gives the same
// changes: the state file, the Resource Dump, a Resource List, and the
// Change Dump (on top of the Resource Dump beside it).
func TestChangesBaselineKinds(t *testing.T) {
	src, out := t.TempDir(), t.TempDir()
	put(t, src, "a", "a0", hour(-1))
	put(t, src, "b", "b0", hour(-1))
	packAt(t, src, out, chgOptions(0))
	put(t, src, "a", "a1", hour(0).Add(time.Minute))
	packAt(t, src, out, chgOptions(1))
	list := writeList(t, out)
	// Generation 2 against each baseline, in copies of the output.
	put(t, src, "b", "b2-longer", hour(1).Add(time.Minute))
	put(t, src, "c", "c2", hour(1).Add(2*time.Minute))
	cases := map[string]struct {
		since string
		want  [3]int
	}{
		"state":        {StateName, [3]int{1, 1, 0}},
		"changedump":   {layout.ChangeDumpName, [3]int{1, 1, 0}},
		"resourcedump": {layout.DumpName, [3]int{1, 2, 0}}, // a was updated since the dump
		"resourcelist": {filepath.Base(list), [3]int{1, 1, 0}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			dir := copyDir(t, out)
			o := chgOptions(2)
			o.Since = filepath.Join(dir, c.since)
			res := packAt(t, src, dir, o)
			if got := [3]int{res.Created, res.Updated, res.Deleted}; got != c.want {
				t.Errorf("created, updated, deleted %v, want %v", got, c.want)
			}
		})
	}
}

// writeList writes a Resource List of the state file's files, as a
// Destination might be given one.
func writeList(t *testing.T, out string) string {
	t.Helper()
	s, head, err := openState(filepath.Join(out, StateName))
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	var urls []resourcesync.URL
	for {
		r, ok, err := s.next()
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		urls = append(urls, resourcesync.URL{Loc: resourcesync.LocFor(chgBase, r.Rel), Lastmod: unixnano.Time(r.Mtime),
			MD: &resourcesync.MD{Hash: r.Hash, Length: resourcesync.Int64(r.Size)}})
	}
	path := filepath.Join(out, "list.xml")
	verifytest.WriteDoc(t, path, resourcesync.Header{MD: resourcesync.MD{Capability: resourcesync.CapResourceList, At: head.Time}}, urls)
	return path
}

func copyDir(t *testing.T, from string) string {
	t.Helper()
	to := t.TempDir()
	entries, _ := os.ReadDir(from)
	for _, e := range entries {
		b := readFile(t, filepath.Join(from, e.Name()))
		if err := os.WriteFile(filepath.Join(to, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return to
}

// TestChangesBadBaseline: a baseline that is missing, unreadable or of
// another kind is an error naming it, and nothing is written.
func TestChangesBadBaseline(t *testing.T) {
	t.Parallel()
	src, out := t.TempDir(), t.TempDir()
	put(t, src, "a", "a0", hour(-1))
	res := packAt(t, src, out, chgOptions(0))
	garbage := filepath.Join(t.TempDir(), "garbage.xml")
	os.WriteFile(garbage, []byte("not xml at all"), 0o644)
	badState := filepath.Join(t.TempDir(), "bad.state")
	os.WriteFile(badState, []byte("{\"version\":1,\"time\":\"2024-01-01T00:00:00Z\"}\nb\t1\n"), 0o644)
	for _, since := range []string{
		filepath.Join(t.TempDir(), "missing.xml"),
		garbage,
		badState,
		filepath.Join(out, res.Packages[0].Manifest), // a manifest is no baseline
	} {
		fresh := t.TempDir()
		o := chgOptions(1)
		o.Since = since
		_, err := Pack(context.Background(), src, fresh, o)
		var be *BaselineError
		if !errors.As(err, &be) || !strings.Contains(err.Error(), since) {
			t.Errorf("--since %s: error %v, want a BaselineError naming it", since, err)
		}
		if left, _ := os.ReadDir(fresh); len(left) > 0 {
			t.Errorf("--since %s: left %d files in the output", since, len(left))
		}
	}
	// A state written for another base URL.
	o := chgOptions(1)
	o.BaseURL = "http://127.0.0.1/other/"
	if _, err := Pack(context.Background(), src, out, o); err == nil || !strings.Contains(err.Error(), StateName) || !strings.Contains(err.Error(), chgBase) {
		t.Errorf("another base URL: error %v, want one naming the state and its base URL", err)
	}
	// No --since and no state file in the output directory.
	if _, err := Pack(context.Background(), src, t.TempDir(), chgOptions(1)); err == nil || !strings.Contains(err.Error(), StateName) {
		t.Errorf("no baseline: error %v, want one naming %s", err, StateName)
	}
}

// TestChangesBadStateKeepsJournal: a state whose last line is bad is
// read once, by the walk's join, and still fails the run before the
// journal an interrupted run left is replaced, or anything is written.
func TestChangesBadStateKeepsJournal(t *testing.T) {
	t.Parallel()
	src, out := t.TempDir(), t.TempDir()
	for _, c := range "abcdef" {
		put(t, src, string(c), "data "+string(c), hour(-1))
	}
	packAt(t, src, out, chgOptions(0))
	put(t, src, "c", "new c", hour(0).Add(time.Minute))
	state := filepath.Join(out, StateName)
	bad := append(readFile(t, state), "zzz\tnot a number\n"...)
	os.WriteFile(state, bad, 0o644)
	journal := []byte(`{"version":1,"options":"an interrupted run's","at":"2024-01-01T00:30:00Z"}` + "\n")
	os.WriteFile(filepath.Join(out, journalName), journal, 0o644)
	before, _ := os.ReadDir(out)
	_, err := Pack(context.Background(), src, out, chgOptions(1))
	var be *BaselineError
	if !errors.As(err, &be) || !strings.Contains(err.Error(), StateName) {
		t.Fatalf("error %v, want a BaselineError naming the state", err)
	}
	if got := readFile(t, filepath.Join(out, journalName)); string(got) != string(journal) {
		t.Errorf("the journal was replaced:\n%s", got)
	}
	if got := readFile(t, state); string(got) != string(bad) {
		t.Errorf("the state was replaced")
	}
	if after, _ := os.ReadDir(out); len(after) != len(before) {
		t.Errorf("%d files in the output after the run, %d before", len(after), len(before))
	}
}

// TestChangesSplitAtOneTime: more deletions at one time (the run's) than
// a package holds. Package intervals must still be contiguous and
// apart, since a Destination skips changes at or before the until it
// applied, and unpack must apply every package.
func TestChangesSplitAtOneTime(t *testing.T) {
	src, out, dst := t.TempDir(), t.TempDir(), t.TempDir()
	for _, c := range "abcdefg" {
		put(t, src, string(c), "data "+string(c), hour(-1))
	}
	packAt(t, src, out, chgOptions(0))
	applyTo(t, filepath.Join(out, layout.DumpName), dst)
	for _, c := range "abcde" {
		os.Remove(filepath.Join(src, string(c)))
	}
	o := chgOptions(1)
	o.MaxEntries = 2
	res := packAt(t, src, out, o)
	if len(res.Packages) != 3 {
		t.Fatalf("%d packages, want 3", len(res.Packages))
	}
	from := hour(0)
	for _, p := range res.Packages {
		if !p.From.Equal(from) || !p.Until.After(p.From) {
			t.Errorf("%s: from %s until %s, want from %s and a later until", p.Name, p.From, p.Until, from)
		}
		checkChangePackage(t, filepath.Join(out, p.Name), p.From, p.Until)
		from = p.Until
	}
	applyTo(t, filepath.Join(out, layout.ChangeDumpName), dst)
	sameTree(t, "after the split deletions", dst, src)
}

// TestUniqueEntryNames: two changes to one resource inside one package
// get distinct paths, and a suffix never takes a name another entry has.
func TestUniqueEntryNames(t *testing.T) {
	t.Parallel()
	taken := map[string]bool{}
	got := []string{uniqueName(taken, "changes/a"), uniqueName(taken, "changes/a"), uniqueName(taken, "changes/a~2"), uniqueName(taken, "changes/a")}
	want := []string{"changes/a", "changes/a~2", "changes/a~2~2", "changes/a~3"}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("names %v, want %v", got, want)
			break
		}
	}
	// And in a package: two updates of a, written and read back.
	o := chgOptions(1)
	o.setDefaults()
	src, dir := t.TempDir(), t.TempDir()
	put(t, src, "a", "first", hour(0).Add(time.Minute))
	enc, err := newEncoder(&o)
	if err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(filepath.Join(src, "a"))
	it := item{rel: "a", abs: filepath.Join(src, "a"), size: fi.Size(), mtime: fi.ModTime(), mode: fi.Mode(), id: fileIDOf(fi),
		change: resourcesync.ChangeCreated, datetime: fi.ModTime()}
	pl := &planned{name: changeDump.packageName(1), from: hour(0), until: hour(1)}
	w, err := newKindWriter(&o, dir, pl, changeDump, hour(1))
	if err != nil {
		t.Fatal(err)
	}
	if err := w.addPrepared(enc.prepare(it)); err != nil {
		t.Fatal(err)
	}
	put(t, src, "a", "second", hour(0).Add(2*time.Minute))
	fi, _ = os.Stat(filepath.Join(src, "a"))
	it.size, it.mtime, it.id, it.change, it.datetime = fi.Size(), fi.ModTime(), fileIDOf(fi), resourcesync.ChangeUpdated, fi.ModTime()
	if err := w.addPrepared(enc.prepare(it)); err != nil {
		t.Fatal(err)
	}
	m, info, err := w.finish(hour(1))
	if err != nil {
		t.Fatal(err)
	}
	if err := w.publish(m, &info); err != nil {
		t.Fatal(err)
	}
	urls := checkChangePackage(t, filepath.Join(dir, info.Name), hour(0), hour(1))
	if len(urls) != 2 || urls[0].Loc != urls[1].Loc || urls[0].MD.Path == urls[1].MD.Path {
		t.Fatalf("entries %+v: want two changes of one resource with distinct paths", urls)
	}
	zr, _ := zip.OpenReader(filepath.Join(dir, info.Name))
	defer zr.Close()
	for _, f := range zr.File {
		if f.Name == urls[1].MD.Path[1:] {
			rc, _ := f.Open()
			b, _ := io.ReadAll(rc)
			if string(b) != "second" {
				t.Errorf("%s holds %q, want the second version", f.Name, b)
			}
		}
	}
}

// TestChangesParsedByResync: resync's own parser reads the Change Dump
// and its manifests.
func TestChangesParsedByResync(t *testing.T) {
	t.Parallel()
	rs := sharedtest.NewResync(t)
	src, out := t.TempDir(), t.TempDir()
	put(t, src, "a", "a0", hour(-1))
	put(t, src, "b", "b0", hour(-1))
	packAt(t, src, out, chgOptions(0))
	put(t, src, "a", "a1", hour(0).Add(time.Minute))
	os.Remove(filepath.Join(src, "b"))
	res := packAt(t, src, out, chgOptions(1))
	for _, f := range []string{layout.ChangeDumpName, res.Packages[0].Manifest, layout.ChangeListName, layout.ResourceListName} {
		got, err := rs.Run(context.Background(), t.TempDir(), "resync-sync", "--parse", "--sitemap", filepath.Join(out, f))
		if err != nil || !strings.Contains(got, "Parsed ") {
			t.Errorf("resync --parse %s: %v\n%s", f, err, got)
		}
	}
}

// TestChangesMetalink: Change Dump packages get their Metalink and
// mirrors as Resource Dump packages do, through the same code.
func TestChangesMetalink(t *testing.T) {
	t.Parallel()
	src, out := t.TempDir(), t.TempDir()
	put(t, src, "a.bin", string(pseudoRandom(200000)), hour(-1))
	packAt(t, src, out, chgOptions(0))
	put(t, src, "a.bin", string(pseudoRandom(210000)), hour(0).Add(time.Minute))
	o := chgOptions(1)
	o.Metalink = &MetalinkOptions{PieceLength: 64 << 10, Mirrors: []layout.Mirror{
		{BaseURL: "http://127.0.0.1:8081/rs/", Location: "de"},
		{BaseURL: "http://127.0.0.2:8082/x/"},
	}}
	p := packAt(t, src, out, o).Packages[0]
	if p.Metalink != "changedump-00001.zip.meta4" {
		t.Fatalf("Metalink %q", p.Metalink)
	}
	mf := decodeMeta4(t, filepath.Join(out, p.Metalink))
	data := readFile(t, filepath.Join(out, p.Name))
	if mf.Name != p.Name || *mf.Size != int64(len(data)) {
		t.Errorf("file %s size %d, want %s %d", mf.Name, *mf.Size, p.Name, len(data))
	}
	checkPieces(t, mf.Pieces[0], data)
	_, _, urls := readIndexed(t, out, layout.ChangeDumpName)
	u := urls[0]
	dup, _ := u.Link("duplicate")
	meta, _ := u.Link("describedby")
	if u.Loc != "http://127.0.0.1:8081/rs/"+p.Name || dup.Href != "http://127.0.0.2:8082/x/"+p.Name || meta.Href != "http://127.0.0.1:8081/rs/"+p.Metalink {
		t.Errorf("changedump.xml entry %+v", u)
	}
}

// TestChangesRerunBeforeState: a run killed after it wrote changedump.xml
// but before the new state runs again from the same baseline; it must
// not take its own packages for earlier ones, and ends as the first did.
func TestChangesRerunBeforeState(t *testing.T) {
	t.Parallel()
	src, out := t.TempDir(), t.TempDir()
	put(t, src, "a", "a0", hour(-1))
	packAt(t, src, out, chgOptions(0))
	put(t, src, "a", "a1", hour(0).Add(time.Minute))
	packAt(t, src, out, chgOptions(1))
	put(t, src, "b", "b2", hour(1).Add(time.Minute))
	old, oldDelta := readFile(t, filepath.Join(out, StateName)), readFile(t, filepath.Join(out, StateName+deltaSuffix))
	packAt(t, src, out, chgOptions(2))
	want := readFile(t, filepath.Join(out, layout.ChangeDumpName))
	// As if killed before the state: its delta's batch is not there.
	os.WriteFile(filepath.Join(out, StateName), old, 0o644)
	os.WriteFile(filepath.Join(out, StateName+deltaSuffix), oldDelta, 0o644)
	res := packAt(t, src, out, chgOptions(2))
	if len(res.Packages) != 1 || res.Packages[0].Name != "changedump-00002.zip" {
		t.Errorf("rerun wrote %+v, want changedump-00002.zip again", res.Packages)
	}
	if got := readFile(t, filepath.Join(out, layout.ChangeDumpName)); string(got) != string(want) {
		t.Errorf("changedump.xml after the rerun:\n%s\nwant\n%s", got, want)
	}
}

// TestChangeDumpIndex: a run's Change Dump past 50,000 packages is
// named by the Change Dump Index as two documents, after the earlier
// runs', covering consecutive intervals.
func TestChangeDumpIndex(t *testing.T) {
	o := chgOptions(1)
	o.setDefaults()
	dir := t.TempDir()
	pkgs := make([]PackageInfo, resourcesync.MaxEntries+1)
	for i := range pkgs {
		name := changeDump.packageName(i + 1)
		pkgs[i] = PackageInfo{Name: name, Manifest: manifestName(name), Length: 100, SHA256: strings.Repeat("0", 64),
			From: hour(0).Add(time.Duration(i) * time.Second), Until: hour(0).Add(time.Duration(i+1) * time.Second)}
	}
	r := &run{opts: &o, out: dirOutput(t, dir), events: func(finding.Event) {}}
	x := &changeIndex{name: layout.ChangeDumpName, capability: resourcesync.CapChangeDump, last: 7}
	x.add(&o, x.partName(7), resourcesync.MD{From: hour(-1), Until: hour(0)}) // an earlier run's
	w := newListWriter(&o, r.out, resourcesync.CapChangeDump, layout.ChangeDumpName)
	for _, u := range dumpEntries(&o, pkgs) {
		if err := w.add(u); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.commitInto(resourcesync.MD{From: hour(0), Until: pkgs[len(pkgs)-1].Until}, x); err != nil {
		t.Fatal(err)
	}
	if err := r.commitIndex(x); err != nil {
		t.Fatal(err)
	}
	h, parts := verifytest.ReadDoc(t, filepath.Join(dir, layout.ChangeDumpName))
	if h.Kind != resourcesync.SitemapIndex || h.MD.Capability != resourcesync.CapChangeDump || len(parts) != 3 || !h.MD.From.Equal(hour(-1)) {
		t.Fatalf("index %+v with %d parts", h, len(parts))
	}
	if !parts[1].MD.From.Equal(hour(0)) || !parts[2].MD.From.Equal(parts[1].MD.Until) || !parts[2].MD.Until.Equal(pkgs[len(pkgs)-1].Until) ||
		resourcesync.BaseName(parts[2].Loc) != "changedump-part00009.xml" {
		t.Errorf("parts %+v, %+v", parts[1], parts[2])
	}
	xmllint(t, filepath.Join(dir, layout.ChangeDumpName), sitemapIndexSchema)
	ph, urls := verifytest.ReadDoc(t, filepath.Join(dir, "changedump-part00009.xml"))
	if len(urls) != 1 || !ph.MD.Until.Equal(pkgs[len(pkgs)-1].Until) || !ph.MD.From.Equal(pkgs[len(pkgs)-2].Until) {
		t.Errorf("the second document of the run: %+v with %d packages", ph.MD, len(urls))
	}
	xmllint(t, filepath.Join(dir, "changedump-part00009.xml"), urlsetSchema)
}

// TestChangesBaselineURL: a Resource Dump baseline read over HTTP, with
// its manifests, from a loopback server.
func TestChangesBaselineURL(t *testing.T) {
	t.Parallel()
	src, out := t.TempDir(), t.TempDir()
	srv := httptest.NewServer(http.StripPrefix("/rs/", http.FileServer(http.Dir(out))))
	defer srv.Close()
	put(t, src, "a", "a0", hour(-1))
	put(t, src, "b", "b0", hour(-1))
	o := chgOptions(0)
	o.BaseURL = srv.URL + "/rs/"
	packAt(t, src, out, o)
	put(t, src, "a", "a1", hour(0).Add(time.Minute))
	o = chgOptions(1)
	o.BaseURL = srv.URL + "/rs/"
	o.Since = srv.URL + "/rs/" + layout.DumpName
	res := packAt(t, src, t.TempDir(), o)
	if res.Updated != 1 || res.Created+res.Deleted != 0 || !res.From.Equal(hour(0)) {
		t.Errorf("%+v, want a updated from %s", res, hour(0))
	}
}

// TestChangesPrune: a --changes run with --prune removes changedump files
// its Change Dump does not list, and leaves the Resource Dump's alone.
func TestChangesPrune(t *testing.T) {
	t.Parallel()
	src, out := t.TempDir(), t.TempDir()
	put(t, src, "a", "a0", hour(-1))
	packAt(t, src, out, chgOptions(0))
	put(t, src, "a", "a1", hour(0).Add(time.Minute))
	packAt(t, src, out, chgOptions(1))
	stale := []string{"changedump-00009.zip", "changedump-00009.manifest.xml", "changedump-part00003.xml"}
	for _, n := range stale {
		os.WriteFile(filepath.Join(out, n), []byte("old"), 0o644)
	}
	put(t, src, "b", "b2", hour(1).Add(time.Minute))
	o := chgOptions(2)
	o.Prune = true
	var removed []string
	o.Events = func(e finding.Event) {
		if r, ok := e.(Removed); ok {
			removed = append(removed, r.Name)
		}
	}
	packAt(t, src, out, o)
	for _, n := range append(stale, "changedump-00001.zip", "changedump-00002.zip", layout.DumpName, "resourcedump-00001.zip") {
		_, err := os.Stat(filepath.Join(out, n))
		if gone := err != nil; gone != strings.Contains(strings.Join(stale, " "), n) {
			t.Errorf("%s: gone %v (removed %v)", n, gone, removed)
		}
	}
}

// TestChangesSkipChanged: a file that changes while a --changes run reads
// it is left out with --skip-changed, and the state keeps the version
// the Destination has, so the next run ships the change.
func TestChangesSkipChanged(t *testing.T) {
	src, out, dst := t.TempDir(), t.TempDir(), t.TempDir()
	put(t, src, "a", "a0", hour(-1))
	put(t, src, "b", "b0", hour(-1))
	packAt(t, src, out, chgOptions(0))
	applyTo(t, filepath.Join(out, layout.DumpName), dst)
	put(t, src, "a", "a1", hour(0).Add(time.Minute))
	put(t, src, "b", "b1", hour(0).Add(time.Minute))
	restore := setHook(func(rel string) {
		if rel == "a" {
			put(t, src, "a", "a2, changed while read", hour(0).Add(2*time.Minute))
		}
	})
	o := chgOptions(1)
	o.SkipChanged = true
	res := packAt(t, src, out, o)
	restore()
	if res.Skipped != 1 || len(res.Packages) != 1 || res.Packages[0].Bitstreams != 1 {
		t.Fatalf("%+v: want b packed and a skipped", res)
	}
	res = packAt(t, src, out, chgOptions(2))
	if res.Updated != 1 || res.Created+res.Deleted != 0 {
		t.Fatalf("next run: %+v, want a updated", res)
	}
	applyTo(t, filepath.Join(out, layout.ChangeDumpName), dst)
	sameTree(t, "after the skipped change", dst, src)
}

// TestChangesFlatHistory: a --changes run reads neither the manifests nor
// the Change Lists nor the Change Dumps of earlier runs (but the last
// Change Dump, for the number of its last package): with those of the
// runs before the last made unreadable it still adds its own, and the
// documents it writes do not grow with the runs before it.
func TestChangesFlatHistory(t *testing.T) {
	t.Parallel()
	src, out := t.TempDir(), t.TempDir()
	put(t, src, "a", "a0", hour(-1))
	packAt(t, src, out, chgOptions(0))
	var sizes []int64
	for k := 1; k <= 6; k++ {
		put(t, src, "a", strings.Repeat("a", k), hour(k-1).Add(time.Minute))
		res := packAt(t, src, out, chgOptions(k))
		p := res.Packages[0]
		if p.Name != changeDump.packageName(k) {
			t.Errorf("run %d wrote %s, want %s", k, p.Name, changeDump.packageName(k))
		}
		var size int64
		for _, name := range []string{changeDump.partName(k), listPartName(layout.ChangeListName, k), p.Manifest} {
			fi, err := os.Stat(filepath.Join(out, name))
			if err != nil {
				t.Fatalf("run %d: %v", k, err)
			}
			size += fi.Size()
		}
		sizes = append(sizes, size)
		if k < 3 {
			continue
		}
		// Every document of the runs before the last, garbled.
		for j := 1; j < k; j++ {
			for _, name := range []string{changeDump.partName(j), listPartName(layout.ChangeListName, j), manifestName(changeDump.packageName(j))} {
				os.WriteFile(filepath.Join(out, name), []byte("<not read"), 0o644)
			}
		}
	}
	for k, s := range sizes[1:] {
		if d := s - sizes[0]; d > int64(10*len(sizes)) { // a digit more in a length, a time, a name
			t.Errorf("run %d's documents take %d bytes, run 1's %d", k+2, s, sizes[0])
		}
	}
	_, parts := verifytest.ReadDoc(t, filepath.Join(out, layout.ChangeListName))
	if len(parts) != 6 {
		t.Errorf("changelist.xml names %d Change Lists, want 6", len(parts))
	}
}

// TestChangesAdoptSingleDocuments: an output of an older rsdump, whose
// changelist.xml and changedump.xml were single documents of every run's
// changes, is continued: each is copied into its index's first part,
// and a Destination applies the whole chain.
func TestChangesAdoptSingleDocuments(t *testing.T) {
	src, out, dst := t.TempDir(), t.TempDir(), t.TempDir()
	put(t, src, "a", "a0", hour(-1))
	put(t, src, "b", "b0", hour(-1))
	packAt(t, src, out, chgOptions(0))
	applyTo(t, filepath.Join(out, layout.DumpName), dst)
	put(t, src, "a", "a1", hour(0).Add(time.Minute))
	res := packAt(t, src, out, chgOptions(1))
	// As the older rsdump wrote them: the run's Change List and Change
	// Dump under the indexes' names, with no index.
	o := chgOptions(1)
	o.setDefaults()
	_, lists := verifytest.ReadDoc(t, filepath.Join(out, listPartName(layout.ChangeListName, 1)))
	verifytest.WriteDoc(t, filepath.Join(out, layout.ChangeListName), resourcesync.Header{Kind: resourcesync.URLSet,
		MD: resourcesync.MD{Capability: resourcesync.CapChangeList, From: hour(0), Until: res.Until}}, lists)
	verifytest.WriteDoc(t, filepath.Join(out, layout.ChangeDumpName), resourcesync.Header{Kind: resourcesync.URLSet,
		MD: resourcesync.MD{Capability: resourcesync.CapChangeDump, From: hour(0)}}, dumpEntries(&o, res.Packages))
	for _, n := range []string{changeDump.partName(1), listPartName(layout.ChangeListName, 1)} {
		os.Remove(filepath.Join(out, n))
	}
	put(t, src, "b", "b2", hour(1).Add(time.Minute))
	if res := packAt(t, src, out, chgOptions(2)); len(res.Packages) != 1 || res.Packages[0].Name != "changedump-00002.zip" {
		t.Fatalf("%+v, want changedump-00002.zip", res.Packages)
	}
	for _, name := range []string{layout.ChangeListName, layout.ChangeDumpName} {
		_, parts, urls := readIndexed(t, out, name)
		if len(parts) != 2 || !parts[0].MD.From.Equal(hour(0)) || len(urls) != 2 {
			t.Errorf("%s: %d documents with %d entries, want the adopted one and the run's, one entry each", name, len(parts), len(urls))
		}
	}
	applyTo(t, filepath.Join(out, layout.ChangeDumpName), dst)
	sameTree(t, "the adopted chain", dst, src)
}

// TestChangesIndexLimit: past the sitemap limit of an index's entries
// the oldest documents are no longer named, and the run says so.
func TestChangesIndexLimit(t *testing.T) {
	defer func(n int) { indexLimit = n }(indexLimit)
	indexLimit = 3
	src, out := t.TempDir(), t.TempDir()
	put(t, src, "a", "a0", hour(-1))
	packAt(t, src, out, chgOptions(0))
	var notes []string
	for k := 1; k <= 5; k++ {
		put(t, src, "a", strings.Repeat("a", k), hour(k-1).Add(time.Minute))
		o := chgOptions(k)
		o.Events = func(e finding.Event) {
			if n, ok := e.(finding.Note); ok {
				notes = append(notes, n.Msg)
			}
		}
		packAt(t, src, out, o)
	}
	for _, name := range []string{layout.ChangeListName, layout.ChangeDumpName} {
		h, parts, _ := readIndexed(t, out, name)
		if len(parts) != 3 || !h.MD.From.Equal(hour(2)) || partNum(parts[0].Loc) != 3 {
			t.Errorf("%s: from %s naming %d documents from %s, want the last 3, from %s", name, h.MD.From, len(parts), parts[0].Loc, hour(2))
		}
	}
	if len(notes) != 4 || !strings.Contains(notes[0], "no longer named") {
		t.Errorf("notes %q, want one per index in each of the last two runs", notes)
	}
}

// TestChangesNewIndex: a baseline that does not end where the indexes end
// starts new ones, said in a note: the run's documents and packages are
// numbered past every earlier one, which the new indexes no longer name.
func TestChangesNewIndex(t *testing.T) {
	t.Parallel()
	src, out := t.TempDir(), t.TempDir()
	put(t, src, "a", "a0", hour(-1))
	packAt(t, src, out, chgOptions(0))
	for k := 1; k <= 2; k++ {
		put(t, src, "a", strings.Repeat("a", k), hour(k-1).Add(time.Minute))
		packAt(t, src, out, chgOptions(k))
	}
	o := chgOptions(3)
	o.Since = filepath.Join(out, layout.DumpName) // at hour(0), not the indexes' hour(2)
	var notes []string
	o.Events = func(e finding.Event) {
		if n, ok := e.(finding.Note); ok {
			notes = append(notes, n.Msg)
		}
	}
	res := packAt(t, src, out, o)
	if len(res.Packages) != 1 || res.Packages[0].Name != "changedump-00003.zip" || len(notes) != 1 || !strings.Contains(notes[0], "a new Change Dump replaces it") {
		t.Fatalf("%+v, notes %q: want changedump-00003.zip and a note", res.Packages, notes)
	}
	for _, name := range []string{layout.ChangeListName, layout.ChangeDumpName} {
		h, parts, _ := readIndexed(t, out, name)
		if len(parts) != 1 || partNum(parts[0].Loc) != 3 || !h.MD.From.Equal(hour(0)) {
			t.Errorf("%s: from %s naming %+v, want only part 3, from %s", name, h.MD.From, parts, hour(0))
		}
	}
}
