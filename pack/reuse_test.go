package pack

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rsdump/rsdump/layout"
	"github.com/rsdump/rsdump/resourcesync"
)

// reuseTree is a source whose Resource List has entries a run can copy
// and entries whose <loc> the encoder escapes ('&'), in several
// directories; changeReuseTree then updates, deletes and creates files.
func reuseTree(t *testing.T) string {
	src := t.TempDir()
	old := hour(0).Add(-time.Hour)
	for i := range 30 {
		put(t, src, fmt.Sprintf("d%d/f%02d.txt", i%3, i), strings.Repeat("x", i+1), old)
	}
	put(t, src, "a&b.txt", "amp", old)
	put(t, src, "with space/é.txt", "sp", old)
	return src
}

func changeReuseTree(t *testing.T, src string) {
	put(t, src, "d1/f04.txt", "changed", hour(0).Add(-30*time.Minute))
	put(t, src, "a&b.txt", "amp2", hour(0).Add(-30*time.Minute))
	os.Remove(filepath.Join(src, "d2/f05.txt"))
	put(t, src, "d0/new.txt", "new", hour(0).Add(-20*time.Minute))
}

// stateHeadOf reads the header of the state in out, as its delta's last
// batch gives it when it has one.
func stateHeadOf(t *testing.T, out string) stateHead {
	t.Helper()
	h, _ := stateRecords(t, out)
	return h
}

// setStateList makes the state in out, which has no delta, name list as
// its Resource List; nil, none, as a state of rsdump before it.
func setStateList(t *testing.T, out string, list []listDoc) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(out, StateName+deltaSuffix)); err == nil {
		t.Fatal("setStateList: the state has a delta")
	}
	b := readFile(t, filepath.Join(out, StateName))
	line, rest, _ := bytes.Cut(b, []byte("\n"))
	var h stateHead
	if err := json.Unmarshal(line, &h); err != nil {
		t.Fatal(err)
	}
	h.List = list
	b, _ = json.Marshal(h)
	if err := os.WriteFile(filepath.Join(out, StateName), append(append(b, '\n'), rest...), 0o644); err != nil {
		t.Fatal(err)
	}
}

// docOf is a document of a Resource List, b, as a state names it.
func docOf(name string, b []byte) listDoc {
	d := listDoc{Name: name}
	for _, l := range bytes.SplitAfter(b, []byte("\n")) {
		if bytes.HasPrefix(l, urlStart) {
			d.Size += int64(len(l))
			d.CRC = crc32.Update(d.CRC, crcTable, l)
		}
	}
	return d
}

// sameOutput checks that two output directories hold the same files,
// byte for byte, and the same state: its header and files, which the
// state file and its delta hold between them (the same state may be
// split otherwise, as when one output's state was altered before).
func sameOutput(t *testing.T, what, want, got string) {
	t.Helper()
	_, err := os.Stat(filepath.Join(want, StateName))
	if _, gerr := os.Stat(filepath.Join(got, StateName)); err == nil || gerr == nil {
		wh, wr := stateRecords(t, want)
		gh, gr := stateRecords(t, got)
		if fmt.Sprint(wh) != fmt.Sprint(gh) || fmt.Sprint(wr) != fmt.Sprint(gr) {
			t.Errorf("%s: the state differs:\n%+v\n%+v\nwant\n%+v\n%+v", what, gh, gr, wh, wr)
		}
	}
	files := func(dir string) []string {
		var names []string
		es, _ := os.ReadDir(dir)
		for _, e := range es {
			if e.Name() != StateName && e.Name() != StateName+deltaSuffix {
				names = append(names, e.Name())
			}
		}
		return names
	}
	wf, gf := files(want), files(got)
	if fmt.Sprint(wf) != fmt.Sprint(gf) {
		t.Errorf("%s: files %v, want %v", what, gf, wf)
	}
	for _, e := range wf {
		if !bytes.Equal(readFile(t, filepath.Join(want, e)), readFile(t, filepath.Join(got, e))) {
			t.Errorf("%s: %s differs", what, e)
		}
	}
}

// TestChangesCopyListLines: the state names the Resource List written
// with it; a --changes run copies the entries of unchanged files from it
// when it is there as written, and its documents are then those of a run
// that encodes every entry (from a state of rsdump before, which names
// no list). A list altered since is not copied from.
func TestChangesCopyListLines(t *testing.T) {
	t.Parallel()
	src := reuseTree(t)
	base := t.TempDir()
	packAt(t, src, base, chgOptions(0))
	head := stateHeadOf(t, base)
	rl := readFile(t, filepath.Join(base, layout.ResourceListName))
	if len(head.List) != 1 || head.List[0] != docOf(layout.ResourceListName, rl) {
		t.Fatalf("the full pack's state names %+v, want %s as written", head.List, layout.ResourceListName)
	}
	changeReuseTree(t, src)

	want := copyDir(t, base)
	setStateList(t, want, nil)
	packAt(t, src, want, chgOptions(1))
	got := copyDir(t, base)
	res := packAt(t, src, got, chgOptions(1))
	if res.Created != 1 || res.Updated != 2 || res.Deleted != 1 {
		t.Fatalf("found %d created, %d updated, %d deleted; want 1, 2, 1", res.Created, res.Updated, res.Deleted)
	}
	sameOutput(t, "copied lines", want, got)
	head = stateHeadOf(t, got)
	if rl := readFile(t, filepath.Join(got, layout.ResourceListName)); len(head.List) != 1 || head.List[0] != docOf(layout.ResourceListName, rl) {
		t.Errorf("the --changes run's state names %+v, want its %s", head.List, layout.ResourceListName)
	}

	// An unchanged file's entry altered (its type, same length): copied
	// when the state names the list so altered, which proves the lines
	// are copied; encoded again when the state names the list as written.
	altered := bytes.Replace(rl, []byte(`d0/f03.txt</loc><lastmod>`), []byte(`d0/f03.txt</loc><lastmoD>`), 1)
	altered = bytes.Replace(altered, []byte(`</lastmod><rs:md hash="md5:`), []byte(`</lastmoD><rs:md hash="md5:`), 1)
	if bytes.Equal(altered, rl) {
		t.Fatal("no entry altered")
	}
	for _, trusted := range []bool{true, false} {
		out := copyDir(t, base)
		if err := os.WriteFile(filepath.Join(out, layout.ResourceListName), altered, 0o644); err != nil {
			t.Fatal(err)
		}
		if trusted {
			setStateList(t, out, []listDoc{docOf(layout.ResourceListName, altered)})
		}
		packAt(t, src, out, chgOptions(1))
		copied := bytes.Contains(readFile(t, filepath.Join(out, layout.ResourceListName)), []byte("<lastmoD>"))
		if copied != trusted {
			t.Errorf("state naming the altered list %v: the altered line copied %v", trusted, copied)
		}
		if !trusted {
			sameOutput(t, "list altered since its state", want, out)
		}
	}
}

// TestChangesListAheadOfState: a run killed after it wrote its Resource
// List and before its state leaves a state that names the list before;
// the next run does not copy from the new one, and writes what an
// uninterrupted run writes.
func TestChangesListAheadOfState(t *testing.T) {
	t.Parallel()
	src := reuseTree(t)
	base := t.TempDir()
	packAt(t, src, base, chgOptions(0))
	changeReuseTree(t, src)
	want := copyDir(t, base)
	packAt(t, src, want, chgOptions(1))
	got := copyDir(t, base)
	if err := os.WriteFile(filepath.Join(got, layout.ResourceListName), readFile(t, filepath.Join(want, layout.ResourceListName)), 0o644); err != nil {
		t.Fatal(err)
	}
	packAt(t, src, got, chgOptions(1))
	sameOutput(t, "list ahead of the state", want, got)
}

// TestChangesStateWithoutList: a run that packs nothing writes no
// Resource List, and its state names none; the next run encodes every
// entry and writes what it would have from the earlier state.
func TestChangesStateWithoutList(t *testing.T) {
	t.Parallel()
	src := reuseTree(t)
	base := t.TempDir()
	packAt(t, src, base, chgOptions(0))
	packAt(t, src, base, chgOptions(1)) // nothing changed
	if head := stateHeadOf(t, base); head.List != nil {
		t.Errorf("a run that wrote no Resource List: its state names %+v", head.List)
	}
	changeReuseTree(t, src)
	want := copyDir(t, base)
	packAt(t, src, want, chgOptions(2))
	if head := stateHeadOf(t, want); len(head.List) != 1 {
		t.Errorf("state names %+v, want the list written", head.List)
	}
	if !bytes.Contains(readFile(t, filepath.Join(want, layout.ResourceListName)), []byte("d0/new.txt")) {
		t.Error("the Resource List lacks the file created")
	}
}

// TestOldListLines: the lines of a list in two documents, by their
// number among the entries, each only if it is the entry of the path
// asked for; a document not as named is not read.
func TestOldListLines(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	base := "http://h/"
	var docs []listDoc
	var lines [][]byte
	for i, rels := range [][]string{{"a", "b/c"}, {"d", "e"}} {
		var urls []resourcesync.URL
		for _, rel := range rels {
			urls = append(urls, resourcesync.URL{Loc: resourcesync.LocFor(base, rel), MD: &resourcesync.MD{Hash: "md5:00"}})
		}
		var buf bytes.Buffer
		h := resourcesync.Header{MD: resourcesync.MD{Capability: resourcesync.CapResourceList},
			Links: []resourcesync.Link{{Rel: "up", Href: "http://h/cap.xml"}, {Rel: "index", Href: "http://h/rl.xml"}}}
		if err := resourcesync.EncodeAll(&buf, h, urls); err != nil {
			t.Fatal(err)
		}
		name := listPartName(layout.ResourceListName, i+1)
		os.WriteFile(filepath.Join(dir, name), buf.Bytes(), 0o644)
		docs = append(docs, docOf(name, buf.Bytes()))
		for _, l := range bytes.SplitAfter(buf.Bytes(), []byte("\n")) {
			if bytes.HasPrefix(l, urlStart) {
				lines = append(lines, l)
			}
		}
	}
	o := &oldList{dir: dir, base: []byte(base), docs: docs}
	if !o.check(nil) {
		t.Fatal("check refuses the documents as written")
	}
	for _, c := range []struct {
		k    int64
		rel  string
		want []byte
	}{{0, "a", nil}, {1, "a", lines[0]}, {3, "d", lines[2]}, {4, "x", nil}, {9, "e", nil}, {4, "e", nil}} {
		if got := o.lineFor(c.k, []byte(c.rel)); !bytes.Equal(got, c.want) {
			t.Errorf("line %d for %s: %q, want %q", c.k, c.rel, got, c.want)
		}
	}
	wrong := &oldList{dir: dir, base: []byte(base), docs: []listDoc{docs[0], {Name: docs[1].Name, Size: docs[1].Size, CRC: docs[1].CRC + 1}}}
	if wrong.check(nil) {
		t.Error("check accepts a document whose CRC is not the one named")
	}
}
