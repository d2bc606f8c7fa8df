package sink

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/rsdump/rsdump/internal/httpc"
	"github.com/rsdump/rsdump/internal/s3test"
)

// sinks runs fn against a directory and an S3 prefix on VersityGW.
func sinks(t *testing.T, fn func(t *testing.T, ctx context.Context, s Sink)) {
	t.Run("dir", func(t *testing.T) {
		d, err := OpenDir(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		fn(t, context.Background(), d)
	})
	t.Run("s3", func(t *testing.T) {
		srv := s3test.Start(t)
		ctx := srv.Context(context.Background())
		b, err := OpenBucket(ctx, "s3://"+srv.Bucket(t, "sinktest")+"/some/prefix", httpc.Default())
		if err != nil {
			t.Fatal(err)
		}
		b.PartSize = minPartSize
		fn(t, ctx, b)
	})
}

func randomBytes(n int, seed uint64) []byte {
	b := make([]byte, n)
	r := rand.NewChaCha8([32]byte{byte(seed)})
	r.Read(b)
	return b
}

func mustRead(t *testing.T, ctx context.Context, s Sink, name string) []byte {
	t.Helper()
	b, err := ReadFile(ctx, s, name, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestCreateCommit(t *testing.T) {
	sinks(t, func(t *testing.T, ctx context.Context, s Sink) {
		data := randomBytes(11<<20+123, 1) // three parts of 5 MiB on S3
		f, err := s.Create(ctx, "pkg/part00001.zip")
		if err != nil {
			t.Fatal(err)
		}
		for b := data; len(b) > 0; b = b[min(len(b), 70000):] {
			if _, err := f.Write(b[:min(len(b), 70000)]); err != nil {
				t.Fatal(err)
			}
		}
		if ok, err := Exists(ctx, s, "pkg/part00001.zip"); ok || err != nil {
			t.Fatalf("before Commit: exists %v, %v", ok, err)
		}
		if err := f.Commit(); err != nil {
			t.Fatal(err)
		}
		if got := mustRead(t, ctx, s, "pkg/part00001.zip"); !bytes.Equal(got, data) {
			t.Fatalf("read back %d bytes, differ from the %d written", len(got), len(data))
		}
		fi, err := s.Stat(ctx, "pkg/part00001.zip")
		if err != nil || fi.Size != int64(len(data)) {
			t.Fatalf("Stat: %+v, %v", fi, err)
		}
		if p, err := s.Pending(ctx); err != nil || len(p) != 0 {
			t.Fatalf("pending after Commit: %v, %v", p, err)
		}
	})
}

func TestAbortLeavesNothing(t *testing.T) {
	sinks(t, func(t *testing.T, ctx context.Context, s Sink) {
		if err := s.WriteFile(ctx, "a.zip", []byte("old")); err != nil {
			t.Fatal(err)
		}
		f, err := s.Create(ctx, "a.zip")
		if err != nil {
			t.Fatal(err)
		}
		f.Write(randomBytes(6<<20, 2))
		if p, err := s.Pending(ctx); err != nil || len(p) != 1 || p[0].Name != "a.zip" {
			t.Fatalf("pending while writing: %v, %v", p, err)
		}
		f.Abort()
		f.Abort()
		if got := mustRead(t, ctx, s, "a.zip"); string(got) != "old" {
			t.Fatalf("after Abort a.zip holds %d bytes, want the old 3", len(got))
		}
		if p, err := s.Pending(ctx); err != nil || len(p) != 0 {
			t.Fatalf("pending after Abort: %v, %v", p, err)
		}
	})
}

func TestSmallFiles(t *testing.T) {
	sinks(t, func(t *testing.T, ctx context.Context, s Sink) {
		for _, n := range []string{"b.xml", "a.xml", "shard-2/x.xml", "c.meta4"} {
			if err := s.WriteFile(ctx, n, []byte("<"+n+">")); err != nil {
				t.Fatal(err)
			}
		}
		if got := mustRead(t, ctx, s, "shard-2/x.xml"); string(got) != "<shard-2/x.xml>" {
			t.Fatalf("read %q", got)
		}
		var names []string
		err := s.List(ctx, "", func(i Info) error { names = append(names, i.Name); return nil })
		if err != nil {
			t.Fatal(err)
		}
		if strings.Join(names, " ") != "a.xml b.xml c.meta4 shard-2/x.xml" {
			t.Fatalf("List: %v", names)
		}
		names = nil
		s.List(ctx, "shard-", func(i Info) error { names = append(names, i.Name); return nil })
		if strings.Join(names, " ") != "shard-2/x.xml" {
			t.Fatalf("List shard-: %v", names)
		}
		if err := s.Remove(ctx, "b.xml"); err != nil {
			t.Fatal(err)
		}
		if err := s.Remove(ctx, "b.xml"); err != nil {
			t.Fatalf("removing a missing file: %v", err)
		}
		if _, err := s.Stat(ctx, "b.xml"); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("Stat of a removed file: %v", err)
		}
		if _, err := s.Open(ctx, "b.xml"); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("Open of a removed file: %v", err)
		}
		if _, err := ReadFile(ctx, s, "a.xml", 3); err == nil {
			t.Fatal("ReadFile past max: no error")
		}
		if err := s.WriteFile(ctx, "../x", nil); err == nil {
			t.Fatal("WriteFile ../x: no error")
		}
	})
}
