package pack

import (
	"errors"
	"slices"
	"strconv"
	"testing"
)

// TestComparePathsIsWalkOrder: the order of comparePaths is the order in
// which the walk visits files, which is not the byte order of the paths
// ("a/b" before "a-b").
func TestComparePathsIsWalkOrder(t *testing.T) {
	t.Parallel()
	src := t.TempDir()
	rels := []string{"a-b", "a/b", "a/c/d", "a.txt", "a0", "b", "a/b-c", "a/b/c", "é", "z z"}
	for _, r := range rels {
		if r == "a/b" {
			continue // a directory here: a/b/c
		}
		put(t, src, r, r, hour(0))
	}
	var walked []string
	w := &walker{ctx: t.Context(), warn: func(string, string) {}, visit: func(it item) error { walked = append(walked, it.rel); return nil }}
	if err := w.walk(src); err != nil {
		t.Fatal(err)
	}
	sorted := slices.Clone(walked)
	slices.Reverse(sorted)
	slices.SortFunc(sorted, comparePaths)
	if !slices.Equal(sorted, walked) {
		t.Errorf("comparePaths order %q, walk order %q", sorted, walked)
	}
	if slices.IsSorted(walked) {
		t.Errorf("walk order %q is plain byte order: the test shows nothing", walked)
	}
}

func TestRecordRoundTrip(t *testing.T) {
	t.Parallel()
	r := record{Rel: "dir one/ü.txt", Size: 12, Mtime: 1700000000123456789, Mode: 0o644, Hash: "md5:00 sha-256:11", Type: "text/plain",
		Change: "updated", Datetime: 1700000000999, Seq: 7}
	got, err := parseRecord(string(r.appendTo(nil)[:len(r.appendTo(nil))-1]))
	if err != nil || got != r {
		t.Errorf("round trip: %+v, %v; want %+v", got, err, r)
	}
	for _, bad := range []string{"", "a\t1", "a\tx\t0\t0\t\t\t\t0\t0", "\t1\t0\t0\t\t\t\t0\t0", "a\t1\t0\t0\t\t\t\t0\t0\textra"} {
		if _, err := parseRecord(bad); err == nil {
			t.Errorf("parseRecord(%q) accepted", bad)
		}
	}
}

// TestParseIntIsStrconv: parseInt accepts and returns what
// strconv.ParseInt does in base 10, at the edges of int64 and past them.
func TestParseIntIsStrconv(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"0", "-0", "1", "-1", "4096", "1795673440794257508", "9223372036854775807",
		"9223372036854775808", "-9223372036854775808", "-9223372036854775809", "99999999999999999999",
		"00000000000000000001", "", "-", "+1", "1a", " 1", "1 ", "--1", "18446744073709551616"} {
		want, err := strconv.ParseInt(s, 10, 64)
		if got, ok := parseInt(s); ok != (err == nil) || ok && got != want {
			t.Errorf("parseInt(%q) = %d, %v; strconv gives %d, %v", s, got, ok, want, err)
		}
	}
}

// countSource gives n records, then err (or the end), counting the
// records it was asked for.
type countSource struct {
	n, given int
	err      error
}

func (c *countSource) next() (record, bool, error) {
	if c.given == c.n {
		return record{}, false, c.err
	}
	c.given++
	return record{Rel: strconv.Itoa(c.given)}, true, nil
}

// TestReadRecsAhead: a source read ahead gives the same records in the
// same order, then its error or its end, for good; closed early, it stops
// reading within a few batches.
func TestReadRecsAhead(t *testing.T) {
	t.Parallel()
	for _, n := range []int{0, 1, aheadBatch, aheadBatch + 1, 5*aheadBatch + 7} {
		for _, fail := range []error{nil, errors.New("bad line")} {
			a := readRecsAhead(&countSource{n: n, err: fail})
			for i := 1; i <= n; i++ {
				r, ok, err := a.next()
				if !ok || err != nil || r.Rel != strconv.Itoa(i) {
					t.Fatalf("%d records (error %v): record %d is %q %v %v", n, fail, i, r.Rel, ok, err)
				}
			}
			for range 2 {
				if _, ok, err := a.next(); ok || err != fail {
					t.Errorf("%d records: after them ok %v, error %v; want false, %v", n, ok, err, fail)
				}
			}
			a.close()
		}
	}
	src := &countSource{n: 100 * aheadBatch}
	a := readRecsAhead(src)
	a.next()
	a.close()
	if src.given > (aheadBatches+3)*aheadBatch {
		t.Errorf("closed after one record: %d read", src.given)
	}
}

// TestKeptLine: the walk's line of a file kept as it was is its state
// line but for the last field; any other line is not one.
func TestKeptLine(t *testing.T) {
	t.Parallel()
	kept := record{Rel: "a/b c", Size: 3, Mtime: 1700000000123456789, Hash: "md5:00", Type: "text/plain", Seq: 42}
	line := kept.appendTo(nil)
	rel, state, seq, ok := keptLine(line[:len(line)-1])
	kept.Seq = 0
	want := kept.appendTo(nil)
	if !ok || string(rel) != "a/b c" || seq != 42 || string(state)+"0\n" != string(want) {
		t.Errorf("kept line %q: %q %q %d %v", line, rel, state, seq, ok)
	}
	if _, _, seq, ok := keptLine(want[:len(want)-1]); !ok || seq != 0 {
		t.Errorf("kept line without a number: seq %d, ok %v", seq, ok)
	}
	for _, r := range []record{
		{Rel: "x", Change: "updated", Datetime: 5, Seq: 3},
		{Rel: "x", Change: "created"},
		{Rel: "x", Datetime: 7},
	} {
		l := r.appendTo(nil)
		if _, _, _, ok := keptLine(l[:len(l)-1]); ok {
			t.Errorf("%q taken for a kept line", l)
		}
	}
	for _, l := range []string{"", "x", "x\t0\t0", "\t\t0\t1", "x\t\t0\t-1"} {
		if _, _, _, ok := keptLine([]byte(l)); ok {
			t.Errorf("%q taken for a kept line", l)
		}
	}
}
