package sink

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/rsdump/rsdump/internal/httpc"
	"github.com/rsdump/rsdump/internal/s3test"
	"github.com/rsdump/rsdump/s3"
)

func proxied(t *testing.T) (*s3test.Server, *s3test.Proxy, context.Context, *Bucket) {
	srv := s3test.Start(t)
	bucket := srv.Bucket(t, "uploads")
	p := srv.NewProxy(t)
	ctx := s3.WithConfig(context.Background(), s3.Config{Endpoint: p.URL})
	b, err := OpenBucket(ctx, "s3://"+bucket+"/out", httpc.Default())
	if err != nil {
		t.Fatal(err)
	}
	b.PartSize = minPartSize
	return srv, p, ctx, b
}

// A part the server refuses (its body no longer matches the SHA-256 it
// was sent with) fails the upload naming the part, and nothing appears.
func TestRejectedPartNamed(t *testing.T) {
	_, p, ctx, b := proxied(t)
	p.Corrupt.Store(2)
	f, err := b.Create(ctx, "part00001.zip")
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.Write(randomBytes(12<<20, 3))
	if err == nil {
		err = f.Commit()
	} else {
		f.Abort()
	}
	var pe *PartError
	if !errors.As(err, &pe) || pe.Part != 2 || !strings.Contains(err.Error(), "s3://uploads/out/part00001.zip: part 2 (bytes 5242880-10485759)") {
		t.Fatalf("error %v; want a PartError naming part 2 of s3://uploads/out/part00001.zip", err)
	}
	t.Log(err)
	if ok, err := Exists(ctx, b, "part00001.zip"); ok || err != nil {
		t.Fatalf("after a refused part: exists %v, %v", ok, err)
	}
	if ps, err := b.Pending(ctx); err != nil || len(ps) != 0 {
		t.Fatalf("after a refused part the upload is left: %v, %v", ps, err)
	}
}

// A resumed upload sends only the parts the server does not hold with the
// same bytes, and the object is the same as from one run.
func TestResumeSkipsStoredParts(t *testing.T) {
	_, p, ctx, b := proxied(t)
	data := randomBytes(17<<20, 4) // parts of 5, 5, 5 and 2 MiB
	f, err := b.Create(ctx, "part00001.zip")
	if err != nil {
		t.Fatal(err)
	}
	f.Write(data[:11<<20]) // parts 1 and 2 go out; then the run "dies"
	u := f.(*upload)
	close(u.jobs)
	u.wg.Wait()
	if err := u.failed(); err != nil {
		t.Fatal(err)
	}
	if n := p.Parts.Load(); n != 2 {
		t.Fatalf("%d parts sent before the crash, want 2", n)
	}
	ps, err := b.Pending(ctx)
	if err != nil || len(ps) != 1 || ps[0].ID != f.ID() {
		t.Fatalf("pending: %v, %v", ps, err)
	}

	p.Parts.Store(0)
	data[(5<<20)+7] ^= 1 // part 2 differs this time: it is sent again
	g, err := b.Resume(ctx, "part00001.zip", f.ID())
	if err != nil {
		t.Fatal(err)
	}
	if g.ID() != f.ID() {
		t.Fatalf("resumed as upload %s, want %s", g.ID(), f.ID())
	}
	if _, err := g.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := g.Commit(); err != nil {
		t.Fatal(err)
	}
	if n := p.BadSums.Load(); n != 0 {
		t.Fatalf("%d parts sent without their SHA-256 in x-amz-checksum-sha256", n)
	}
	if n := p.Parts.Load(); n != 3 {
		t.Fatalf("the resumed upload sent %d parts, want 3 (2, 3, 4)", n)
	}
	if got := mustRead(t, ctx, b, "part00001.zip"); !bytes.Equal(got, data) {
		t.Fatal("resumed object differs from the data")
	}

	// An upload that is gone starts afresh.
	h, err := b.Resume(ctx, "other.zip", "no-such-upload")
	if err != nil {
		t.Fatal(err)
	}
	h.Write([]byte("x"))
	if err := h.Commit(); err != nil {
		t.Fatal(err)
	}
	if got := mustRead(t, ctx, b, "other.zip"); string(got) != "x" {
		t.Fatalf("other.zip: %q", got)
	}
}

// Discard aborts what a killed run left.
func TestDiscardPending(t *testing.T) {
	_, _, ctx, b := proxied(t)
	f, err := b.Create(ctx, "left.zip")
	if err != nil {
		t.Fatal(err)
	}
	f.Write(randomBytes(6<<20, 5))
	u := f.(*upload)
	close(u.jobs)
	u.wg.Wait()
	ps, err := b.Pending(ctx)
	if err != nil || len(ps) != 1 {
		t.Fatalf("pending: %v, %v", ps, err)
	}
	if err := b.Discard(ctx, ps[0]); err != nil {
		t.Fatal(err)
	}
	if ps, err := b.Pending(ctx); err != nil || len(ps) != 0 {
		t.Fatalf("pending after Discard: %v, %v", ps, err)
	}
	if ok, _ := Exists(ctx, b, "left.zip"); ok {
		t.Fatal("a discarded upload appeared")
	}
}
