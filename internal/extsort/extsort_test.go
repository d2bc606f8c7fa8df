package extsort

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

type rec struct{ key, seq uint32 }

var codec = Codec[rec]{
	Append: func(b []byte, r *rec) []byte {
		return binary.LittleEndian.AppendUint32(binary.LittleEndian.AppendUint32(b, r.key), r.seq)
	},
	Read: func(br *bufio.Reader) (rec, error) {
		var b [8]byte
		if _, err := io.ReadFull(br, b[:]); err != nil {
			return rec{}, err
		}
		return rec{binary.LittleEndian.Uint32(b[:]), binary.LittleEndian.Uint32(b[4:])}, nil
	},
}

func byKey(a, b *rec) int { return int(a.key) - int(b.key) }

// Records come out sorted, equal keys in the order they were added, when
// the runs are many enough to be merged into one on the way
// (MaxFanIn), and no run file is left once the sorter is closed.
func TestSortSpillsAndMergesStably(t *testing.T) {
	t.Parallel()
	for _, n := range []int{0, 5, 10, 10*MaxFanIn + 3} {
		dir := t.TempDir()
		s := New(dir, ".run-*", 10, byKey, codec)
		r := rand.New(rand.NewPCG(1, uint64(n)))
		for i := range n {
			if err := s.Add(rec{key: r.Uint32N(50), seq: uint32(i)}); err != nil {
				t.Fatal(err)
			}
		}
		if s.Runs() >= MaxFanIn {
			t.Errorf("%d records: %d runs open", n, s.Runs())
		}
		src, err := s.Sorted()
		if err != nil {
			t.Fatal(err)
		}
		var prev *rec
		got := 0
		for {
			x, ok, err := src.Next()
			if err != nil {
				t.Fatal(err)
			}
			if !ok {
				break
			}
			if prev != nil && (x.key < prev.key || x.key == prev.key && x.seq < prev.seq) {
				t.Fatalf("%d records: %v after %v", n, x, *prev)
			}
			prev = &x
			got++
		}
		if got != n || s.Len() != int64(n) {
			t.Errorf("%d records in, %d out, Len %d", n, got, s.Len())
		}
		s.Close()
		if left, _ := filepath.Glob(filepath.Join(dir, "*")); len(left) > 0 {
			t.Errorf("left behind: %v", left)
		}
	}
}

// A run file cut short is an error naming it, not a short result.
func TestTruncatedRun(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := New(dir, ".run-*", 2, byKey, codec)
	defer s.Close()
	for i := range 5 {
		s.Add(rec{key: uint32(i)})
	}
	runs, _ := filepath.Glob(filepath.Join(dir, ".run-*"))
	if err := os.Truncate(runs[0], 3); err != nil {
		t.Fatal(err)
	}
	src, err := s.Sorted()
	for err == nil {
		var ok bool
		if _, ok, err = src.Next(); !ok && err == nil {
			t.Fatal("no error")
		}
	}
}

// Sorted called a second time, once the first stream was read, gives the
// same records again, whether they were held in memory or in runs.
func TestSortedTwice(t *testing.T) {
	t.Parallel()
	for _, n := range []int{7, 10*MaxFanIn + 3} {
		s := New(t.TempDir(), ".run-*", 10, byKey, codec)
		r := rand.New(rand.NewPCG(2, uint64(n)))
		for i := range n {
			s.Add(rec{key: r.Uint32N(50), seq: uint32(i)})
		}
		var passes [2][]rec
		for p := range passes {
			passes[p] = sortedAll(t, s)
		}
		if len(passes[0]) != n || len(passes[1]) != n {
			t.Fatalf("n=%d: %d records, then %d", n, len(passes[0]), len(passes[1]))
		}
		for i := range passes[0] {
			if passes[0][i] != passes[1][i] || i > 0 && passes[0][i].key < passes[0][i-1].key {
				t.Fatalf("n=%d: record %d: %v, then %v", n, i, passes[0][i], passes[1][i])
			}
		}
		s.Close()
	}
}

// Strings round-trips any string, NUL bytes and the empty string among
// them, in order; a run cut inside a string is an error, not a shorter
// run.
func TestStrings(t *testing.T) {
	t.Parallel()
	in := []string{"b", "", "a\x00b", "a", strings.Repeat("z", 300)}
	s := New(t.TempDir(), ".run-*", 2, func(a, b *string) int { return strings.Compare(*a, *b) }, Strings)
	defer s.Close()
	for _, x := range in {
		s.Add(x)
	}
	if out, want := sortedAll(t, s), []string{"", "a", "a\x00b", "b", strings.Repeat("z", 300)}; !slices.Equal(out, want) {
		t.Errorf("%q, want %q", out, want)
	}
	b := AppendString(nil, "hello")
	if _, err := ReadString(bufio.NewReader(bytes.NewReader(b[:3]))); err != io.ErrUnexpectedEOF {
		t.Errorf("a cut string: %v", err)
	}
}

// sortedAll reads every record s.Sorted streams.
func sortedAll[T any](t *testing.T, s *Sorter[T]) []T {
	t.Helper()
	src, err := s.Sorted()
	if err != nil {
		t.Fatal(err)
	}
	var out []T
	for {
		x, ok, err := src.Next()
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			return out
		}
		out = append(out, x)
	}
}
