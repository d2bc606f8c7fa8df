package pack

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rsdump/rsdump/finding"
	"github.com/rsdump/rsdump/internal/unixnano"
	"github.com/rsdump/rsdump/layout"
)

// deltaTree is a source of 40 files in 4 directories, packed whole at
// hour 0 into a new output.
func deltaTree(t *testing.T) (src, out string) {
	src, out = t.TempDir(), t.TempDir()
	for i := range 40 {
		put(t, src, fmt.Sprintf("d%d/f%02d.txt", i%4, i), strings.Repeat("x", i+1), hour(0).Add(-time.Hour))
	}
	packAt(t, src, out, chgOptions(0))
	return src, out
}

// changeDeltaTree changes three files of deltaTree before run k: one
// updated, one deleted, one created.
func changeDeltaTree(t *testing.T, src string, k int) {
	mt := hour(k - 1).Add(30 * time.Minute)
	put(t, src, fmt.Sprintf("d1/f%02d.txt", 4*k+1), fmt.Sprintf("run %d", k), mt)
	os.Remove(filepath.Join(src, fmt.Sprintf("d2/f%02d.txt", 4*k+2)))
	put(t, src, fmt.Sprintf("d3/new%d.txt", k), "new", mt)
}

// deltaBatches splits a delta file into its batches' lines: record lines,
// then the trailer.
func deltaBatches(t *testing.T, out string) [][]string {
	t.Helper()
	var batches [][]string
	var cur []string
	for _, l := range strings.SplitAfter(string(readFile(t, filepath.Join(out, StateName+deltaSuffix))), "\n") {
		if l == "" {
			continue
		}
		cur = append(cur, l)
		if !strings.Contains(l, "\t") {
			batches, cur = append(batches, cur), nil
		}
	}
	if cur != nil {
		t.Fatalf("delta ends in a batch without its trailer: %q", cur)
	}
	return batches
}

// TestStateDeltaGrowsByChanges: a --changes run leaves the state file as
// it was and adds to its delta a batch of what changed (the update, the
// deletion and the creation: three lines and the trailer), and the state
// it describes, header and files, is the one a run that writes the whole
// state leaves (deltaLimit 0), as is every other file of the output.
func TestStateDeltaGrowsByChanges(t *testing.T) {
	src, out := deltaTree(t)
	whole := copyDir(t, out)
	base := readFile(t, filepath.Join(out, StateName))
	for k := 1; k <= 3; k++ {
		changeDeltaTree(t, src, k)
		res := packAt(t, src, out, chgOptions(k))
		if res.Created != 1 || res.Updated != 1 || res.Deleted != 1 {
			t.Fatalf("run %d found %d created, %d updated, %d deleted; want 1 each", k, res.Created, res.Updated, res.Deleted)
		}
		limit := deltaLimit
		deltaLimit = func(int64) int64 { return 0 }
		packAt(t, src, whole, chgOptions(k))
		deltaLimit = limit
		if !bytes.Equal(readFile(t, filepath.Join(out, StateName)), base) {
			t.Fatalf("run %d rewrote the state file", k)
		}
		b := deltaBatches(t, out)
		if len(b) != k || len(b[k-1]) != 4 {
			t.Fatalf("run %d: delta of %d batches, the last %q; want %d, of 3 files and a trailer", k, len(b), b[len(b)-1], k)
		}
		if _, err := os.Stat(filepath.Join(whole, StateName+deltaSuffix)); err == nil {
			t.Fatalf("run %d: a run that wrote the whole state left a delta", k)
		}
		sameOutput(t, fmt.Sprintf("run %d", k), whole, out)
	}
	h, recs := stateRecords(t, out)
	if !h.Time.Equal(hour(3)) || len(h.List) != 1 || len(recs) != 40 {
		t.Errorf("state after 3 runs: time %s, list %+v, %d files; want %s, the Resource List, 40", h.Time, h.List, len(recs), hour(3))
	}
}

// TestStateDeltaTorn: a batch without its trailer, or whose trailer does
// not match its lines, is not part of the state; the next run appends its
// batch after it, on a line of its own, and ends as a run from the state
// without it.
func TestStateDeltaTorn(t *testing.T) {
	t.Parallel()
	src, out := deltaTree(t)
	changeDeltaTree(t, src, 1)
	packAt(t, src, out, chgOptions(1))
	changeDeltaTree(t, src, 2)
	want := copyDir(t, out)
	packAt(t, src, want, chgOptions(2))
	h1, r1 := stateRecords(t, out)
	delta := readFile(t, filepath.Join(want, StateName+deltaSuffix))
	batches := deltaBatches(t, want)
	last := strings.Join(batches[1], "")
	first := len(delta) - len(last)
	i := strings.Index(last, "sha-256:") + len("sha-256:")
	altered := last[:i] + map[bool]string{true: "1", false: "0"}[last[i] == '0'] + last[i+1:]
	for name, tail := range map[string]string{
		"no trailer":       strings.Join(batches[1][:3], ""),
		"torn trailer":     last[:len(last)-20],
		"a line altered":   altered,
		"a line left out":  strings.Join(batches[1][1:], ""),
		"half a line":      last[:10],
		"a trailer alone":  batches[1][3],
		"another base":     strings.Replace(last, `"base":{"size":`, `"base":{"size":1`, 1),
		"the lines, twice": strings.Join(batches[1][:3], "") + last,
		"lines -1":         strings.Replace(last, `"lines":3,`, `"lines":-1,`, 1),
		"lines 2":          strings.Replace(last, `"lines":3,`, `"lines":2,`, 1),
	} {
		got := copyDir(t, out)
		torn := append(delta[:first:first], tail...)
		if err := os.WriteFile(filepath.Join(got, StateName+deltaSuffix), torn, 0o644); err != nil {
			t.Fatal(err)
		}
		if h, r := stateRecords(t, got); fmt.Sprint(h, r) != fmt.Sprint(h1, r1) {
			t.Errorf("%s: the state read is not the one before the batch:\n%+v\n%+v", name, h, r)
		}
		packAt(t, src, got, chgOptions(2))
		sameOutput(t, name, want, got)
		d := readFile(t, filepath.Join(got, StateName+deltaSuffix))
		if !bytes.HasPrefix(d, torn) {
			t.Fatalf("%s: the rerun did not append to the delta:\n%s", name, d)
		}
		added, from := string(d[len(torn):]), len(torn)
		if !strings.HasSuffix(tail, "\n") {
			added, from = strings.TrimPrefix(added, "\n"), from+1
		}
		if added != strings.Replace(last, fmt.Sprintf(`"from":%d,`, first), fmt.Sprintf(`"from":%d,`, from), 1) {
			t.Errorf("%s: the rerun appended\n%s\nwant the batch of the uninterrupted run, from %d:\n%s", name, added, from, last)
		}
	}
}

// TestStateDeltaCompacts: a run whose delta would pass deltaLimit
// writes the whole state and removes the delta; the state is the same. A
// delta left beside a state written since (a run killed before it
// removed it) names another base and is ignored, as is one beside a
// full pack's state.
func TestStateDeltaCompacts(t *testing.T) {
	src, out := deltaTree(t)
	changeDeltaTree(t, src, 1)
	packAt(t, src, out, chgOptions(1))
	changeDeltaTree(t, src, 2)
	packAt(t, src, out, chgOptions(2))
	stale := readFile(t, filepath.Join(out, StateName+deltaSuffix))
	want := copyDir(t, out)
	changeDeltaTree(t, src, 3)
	packAt(t, src, want, chgOptions(3))

	size := int64(len(readFile(t, filepath.Join(out, StateName))))
	limit := deltaLimit
	defer func() { deltaLimit = limit }()
	deltaLimit = func(base int64) int64 {
		if base != size {
			t.Errorf("deltaLimit(%d), want the state's %d bytes", base, size)
		}
		return int64(len(stale)) + 100 // less than a batch of three files more
	}
	packAt(t, src, out, chgOptions(3))
	deltaLimit = limit
	if _, err := os.Stat(filepath.Join(out, StateName+deltaSuffix)); err == nil {
		t.Error("the delta is still there after the state was written whole")
	}
	sameOutput(t, "compacted", want, out)

	os.WriteFile(filepath.Join(out, StateName+deltaSuffix), stale, 0o644)
	sameOutput(t, "a stale delta beside the compacted state", want, out)
	changeDeltaTree(t, src, 4)
	packAt(t, src, want, chgOptions(4))
	packAt(t, src, out, chgOptions(4))
	sameOutput(t, "the run after", want, out)
	if b := deltaBatches(t, out); len(b) != 1 {
		t.Errorf("the run after the stale delta left %d batches, want its own", len(b))
	}
}

// TestStateVersion1: pack writes states of version 2, which an rsdump
// before (version 1 only) refuses rather than read without their delta;
// a state of version 1 is read, and a --changes run from it writes the
// whole state, of version 2, rather than a delta beside it.
func TestStateVersion1(t *testing.T) {
	t.Parallel()
	src, out := deltaTree(t)
	if h := stateHeadOf(t, out); h.Version != 2 {
		t.Fatalf("a full pack's state is of version %d, want 2", h.Version)
	}
	b := readFile(t, filepath.Join(out, StateName))
	v1 := bytes.Replace(b, []byte(`{"version":2,`), []byte(`{"version":1,`), 1)
	if bytes.Equal(v1, b) {
		t.Fatal("no version in the state's header")
	}
	if err := os.WriteFile(filepath.Join(out, StateName), v1, 0o644); err != nil {
		t.Fatal(err)
	}
	changeDeltaTree(t, src, 1)
	res := packAt(t, src, out, chgOptions(1))
	if res.Created != 1 || res.Updated != 1 || res.Deleted != 1 {
		t.Fatalf("from a state of version 1: found %d created, %d updated, %d deleted; want 1 each", res.Created, res.Updated, res.Deleted)
	}
	if _, err := os.Stat(filepath.Join(out, StateName+deltaSuffix)); err == nil {
		t.Error("a delta beside a state of version 1")
	}
	if h, recs := stateRecords(t, out); h.Version != 2 || !h.Time.Equal(hour(1)) || len(recs) != 40 {
		t.Errorf("the state after: version %d, time %s, %d files; want 2, %s, 40", h.Version, h.Time, len(recs), hour(1))
	}
}

// TestStateDeltaTouched: a file --checksum finds touched (another mtime,
// the same content) is kept with its new mtime in the state a run
// writes whole; the delta has it too, so that the next run, without
// --checksum, does not find it updated, and the state read is the one a
// run writing the whole state leaves.
func TestStateDeltaTouched(t *testing.T) {
	src, out := deltaTree(t)
	whole := copyDir(t, out)
	changeDeltaTree(t, src, 1)
	touched := hour(0).Add(10 * time.Minute)
	put(t, src, "d0/f08.txt", strings.Repeat("x", 9), touched)
	o := chgOptions(1)
	o.Checksum = true
	if res := packAt(t, src, out, o); res.Created != 1 || res.Updated != 1 || res.Deleted != 1 {
		t.Fatalf("found %d created, %d updated, %d deleted; want 1 each", res.Created, res.Updated, res.Deleted)
	}
	limit := deltaLimit
	deltaLimit = func(int64) int64 { return 0 }
	packAt(t, src, whole, o)
	deltaLimit = limit
	sameOutput(t, "touched", whole, out)
	_, recs := stateRecords(t, out)
	for _, r := range recs {
		if r.Rel == "d0/f08.txt" && r.Mtime != unixnano.Of(touched) {
			t.Errorf("the state has %s with mtime %d, want the touched file's %d", r.Rel, r.Mtime, unixnano.Of(touched))
		}
	}
	if res := packAt(t, src, out, chgOptions(2)); res.Created+res.Updated+res.Deleted != 0 {
		t.Errorf("the run after found %d created, %d updated, %d deleted; want none", res.Created, res.Updated, res.Deleted)
	}
}

// TestStateDeltaSameFileTwice: files changed in two batches (updated
// twice; deleted, then created again; created, then deleted) are read as
// the last batch left them, as a run writing the whole state leaves them.
func TestStateDeltaSameFileTwice(t *testing.T) {
	src, out := deltaTree(t)
	whole := copyDir(t, out)
	steps := []func(mt time.Time){
		func(mt time.Time) {
			put(t, src, "d0/f04.txt", "one", mt)
			os.Remove(filepath.Join(src, "d1/f05.txt"))
			put(t, src, "d2/new.txt", "new", mt)
		},
		func(mt time.Time) {
			put(t, src, "d0/f04.txt", "two!", mt)
			put(t, src, "d1/f05.txt", "back", mt)
			os.Remove(filepath.Join(src, "d2/new.txt"))
		},
	}
	for k, step := range steps {
		step(hour(k).Add(30 * time.Minute))
		res := packAt(t, src, out, chgOptions(k+1))
		if res.Created != 1 || res.Updated != 1 || res.Deleted != 1 {
			t.Fatalf("run %d found %d created, %d updated, %d deleted; want 1 each", k+1, res.Created, res.Updated, res.Deleted)
		}
		limit := deltaLimit
		deltaLimit = func(int64) int64 { return 0 }
		packAt(t, src, whole, chgOptions(k+1))
		deltaLimit = limit
		sameOutput(t, fmt.Sprintf("run %d", k+1), whole, out)
	}
	if b := deltaBatches(t, out); len(b) != 2 {
		t.Errorf("%d batches, want 2", len(b))
	}
	if res := packAt(t, src, out, chgOptions(3)); res.Created+res.Updated+res.Deleted != 0 {
		t.Errorf("the run after found %d created, %d updated, %d deleted; want none", res.Created, res.Updated, res.Deleted)
	}
}

// TestStateDeltaWalkRuns: a --changes run into the state's delta, with
// the Resource List that state names there, writes the files it keeps
// as they were as runs, one line each, in its walk: its lines are those
// of the three files changed and the runs between them, which count the
// 38 files kept (of 40, one updated, one deleted), not a line a file.
func TestStateDeltaWalkRuns(t *testing.T) {
	t.Parallel()
	src, out := deltaTree(t)
	changeDeltaTree(t, src, 1)
	var walk []string
	o := chgOptions(1)
	o.Events = func(e finding.Event) {
		if _, ok := e.(PackageDone); !ok {
			return
		}
		names, _ := filepath.Glob(filepath.Join(out, ".rsdump-walk-*.tmp"))
		if len(names) != 1 {
			t.Errorf("walk files %v, want one", names)
			return
		}
		walk = strings.Split(strings.TrimSuffix(string(readFile(t, names[0])), "\n"), "\n")
	}
	packAt(t, src, out, o)
	runs, kept := 0, int64(0)
	for _, l := range walk {
		if n, ok := walkRun([]byte(l)); ok {
			runs++
			kept += n
		}
	}
	if len(walk)-runs != 3 || runs == 0 || runs > 4 || kept != 38 {
		t.Errorf("the walk has %d lines, %d of them runs of %d kept files; want 3 lines of changes and up to 4 runs of 38:\n%s",
			len(walk), runs, kept, strings.Join(walk, "\n"))
	}
}

// TestStateDeltaListNotFollowed: a Resource List that the state names
// (its length and CRC as the state gives them) but whose entries are not
// in the order of the state's files fails the run where the entry of a
// file not kept is not where the state has the file, rather than giving
// the kept files the lines of others.
func TestStateDeltaListNotFollowed(t *testing.T) {
	t.Parallel()
	src, out := deltaTree(t)
	rl := readFile(t, filepath.Join(out, layout.ResourceListName))
	lines := bytes.SplitAfter(rl, []byte("\n"))
	i, j := -1, -1
	for k, l := range lines {
		switch {
		case bytes.Contains(l, []byte("/d2/f06.txt</loc>")):
			i = k
		case bytes.Contains(l, []byte("/d2/f10.txt</loc>")):
			j = k
		}
	}
	if i < 0 || j < 0 {
		t.Fatalf("no entry of d2/f06.txt or d2/f10.txt in\n%s", rl)
	}
	lines[i], lines[j] = lines[j], lines[i]
	swapped := bytes.Join(lines, nil)
	if err := os.WriteFile(filepath.Join(out, layout.ResourceListName), swapped, 0o644); err != nil {
		t.Fatal(err)
	}
	setStateList(t, out, []listDoc{docOf(layout.ResourceListName, swapped)})
	changeDeltaTree(t, src, 1) // d2/f06.txt deleted
	_, err := Pack(context.Background(), src, out, chgOptions(1))
	if err == nil || !strings.Contains(err.Error(), "has not the entry of d2/f06.txt") {
		t.Errorf("Pack: %v, want the entry of d2/f06.txt not found where the state has it", err)
	}
}
