package sink

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"testing"

	"github.com/rsdump/rsdump/internal/httpc"
)

// TestAppend: appended records read back whole and in order, after a
// restart too (a new sink on the same place appends after them), and
// Remove takes them all.
func TestAppend(t *testing.T) {
	sinks(t, func(t *testing.T, ctx context.Context, s Sink) {
		var want bytes.Buffer
		line := func(i int) []byte { return fmt.Appendf(nil, "%06d %s\n", i, bytes.Repeat([]byte("x"), 3000)) }
		n := 2*segmentMax/len(line(0)) + 10 // three segments on S3
		for i := range n {
			if err := s.Append(ctx, "j/journal", line(i)); err != nil {
				t.Fatal(err)
			}
			want.Write(line(i))
		}
		again := reopen(t, ctx, s)
		if err := again.Append(ctx, "j/journal", line(n)); err != nil {
			t.Fatal(err)
		}
		want.Write(line(n))
		if got := mustRead(t, ctx, again, "j/journal"); !bytes.Equal(got, want.Bytes()) {
			t.Fatalf("read back %d bytes, want %d", len(got), want.Len())
		}
		if b, ok := s.(*Bucket); ok {
			var segs []string
			b.List(ctx, segmentDir("j/journal"), func(in Info) error {
				segs = append(segs, in.Name)
				if in.Size > segmentMax {
					t.Errorf("%s: %d bytes, more than a segment", in.Name, in.Size)
				}
				return nil
			})
			if len(segs) != 3 {
				t.Errorf("segments %q, want 3", segs)
			}
		}
		if err := again.Remove(ctx, "j/journal"); err != nil {
			t.Fatal(err)
		}
		if _, err := again.Open(ctx, "j/journal"); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("open after remove: %v", err)
		}
	})
}

// reopen returns a new sink on the same place, as a rerun opens it.
func reopen(t *testing.T, ctx context.Context, s Sink) Sink {
	switch s := s.(type) {
	case *Dir:
		return &Dir{dir: s.dir}
	case *Bucket:
		b, err := OpenBucket(ctx, s.Loc(""), httpc.Default())
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	t.Fatalf("unknown sink %T", s)
	return nil
}

// TestAppendDoesNotRewrite: on disk an append writes at the end of the
// same file, never a new copy of the whole.
func TestAppendDoesNotRewrite(t *testing.T) {
	t.Parallel()
	d, err := OpenDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	d.Append(ctx, "log", []byte("one\n"))
	before, _ := os.Stat(d.Loc("log"))
	d.Append(ctx, "log", []byte("two\n"))
	after, _ := os.Stat(d.Loc("log"))
	if !os.SameFile(before, after) || after.Size() != 8 {
		t.Errorf("append replaced the file or lost data: same %v, size %d", os.SameFile(before, after), after.Size())
	}
}

// TestAppendAfterWholeFile: Append to a name written whole before (an
// output copied from a directory to a bucket, a state's delta among its
// files) adds at its end, there as in a directory, and what is appended
// after reads back, after a restart too; a seeding of the first segment
// from the object that a kill interrupted before the object was removed
// is finished by the next Append.
func TestAppendAfterWholeFile(t *testing.T) {
	sinks(t, func(t *testing.T, ctx context.Context, s Sink) {
		if err := s.WriteFile(ctx, "d/log", []byte("one\n")); err != nil {
			t.Fatal(err)
		}
		if err := s.Append(ctx, "d/log", []byte("two\n")); err != nil {
			t.Fatal(err)
		}
		again := reopen(t, ctx, s)
		if err := again.Append(ctx, "d/log", []byte("three\n")); err != nil {
			t.Fatal(err)
		}
		if got := mustRead(t, ctx, reopen(t, ctx, s), "d/log"); string(got) != "one\ntwo\nthree\n" {
			t.Errorf("read back %q, want the file written whole and both appends", got)
		}
		if _, ok := s.(*Bucket); !ok {
			return
		}
		// Killed once segment 1 held the object's bytes, before the
		// object was removed.
		if err := s.WriteFile(ctx, "d/log2", []byte("one\n")); err != nil {
			t.Fatal(err)
		}
		if err := s.WriteFile(ctx, segmentName("d/log2", 1), []byte("one\n")); err != nil {
			t.Fatal(err)
		}
		if err := reopen(t, ctx, s).Append(ctx, "d/log2", []byte("two\n")); err != nil {
			t.Fatal(err)
		}
		if got := mustRead(t, ctx, reopen(t, ctx, s), "d/log2"); string(got) != "one\ntwo\n" {
			t.Errorf("after an interrupted seeding: read back %q, want %q", got, "one\ntwo\n")
		}
		// An object of several segments, the seeding killed after the
		// first: a later sink reads its last segment.
		big := randomBytes(5*segmentMax/2, 3)
		if err := s.WriteFile(ctx, "d/log3", big); err != nil {
			t.Fatal(err)
		}
		if err := s.WriteFile(ctx, segmentName("d/log3", 1), big[:segmentMax]); err != nil {
			t.Fatal(err)
		}
		for i := range 2 {
			if err := reopen(t, ctx, s).Append(ctx, "d/log3", []byte{byte(i)}); err != nil {
				t.Fatal(err)
			}
		}
		if got := mustRead(t, ctx, reopen(t, ctx, s), "d/log3"); !bytes.Equal(got, append(big, 0, 1)) {
			t.Errorf("an object of %d bytes and two appends read back as %d bytes", len(big), len(got))
		}
	})
}
