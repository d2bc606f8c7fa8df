package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rsdump/rsdump/finding"
	"github.com/rsdump/rsdump/layout"
	"github.com/rsdump/rsdump/transfer"
)

// fakeClock is a clock the test moves.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

// plainProgress is a non-terminal renderer on a fake clock, whose ticks
// the test drives.
func plainProgress(buf *bytes.Buffer, desc string) (*progress, *fakeClock) {
	c := &fakeClock{time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	p := newProgress(buf, false, desc)
	p.now, p.start, p.last = c.now, c.t, c.t
	return p, c
}

// TestPlainProgressLine checks the lines printed when stderr is not a
// terminal: one every few seconds, with percent, bytes done, total, rate
// and ETA once the total is known.
func TestPlainProgressLine(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	p, c := plainProgress(&buf, "verifying")
	p.grow(4 << 30)
	p.n = 1 << 30 // as add would count, without starting the ticker
	c.t = c.t.Add(2 * time.Second)
	p.tick()
	if buf.Len() != 0 {
		t.Fatalf("a line before the interval: %q", buf.String())
	}
	c.t = c.t.Add(3 * time.Second)
	p.tick()
	want := "rsdump: verifying: 25%, 1.0 GiB of 4.0 GiB, 214.7 MB/s, ETA 15s\n"
	if got := buf.String(); got != want {
		t.Errorf("line %q, want %q", got, want)
	}
	buf.Reset()
	p.n += 1 << 30
	p.detail = "package 2"
	c.t = c.t.Add(10 * time.Second)
	p.tick()
	want = "rsdump: verifying package 2: 50%, 2.0 GiB of 4.0 GiB, 107.4 MB/s, ETA 20s\n"
	if got := buf.String(); got != want {
		t.Errorf("line %q, want %q", got, want)
	}
	p.done()
}

// TestPlainProgressNoTotal: before the total is known, the line gives the
// bytes done and the rate, no percent.
func TestPlainProgressNoTotal(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	p, c := plainProgress(&buf, "packing")
	p.n = 3 << 30
	c.t = c.t.Add(time.Minute)
	p.tick()
	if got, want := buf.String(), "rsdump: packing: 3.0 GiB, 53.7 MB/s\n"; got != want {
		t.Errorf("line %q, want %q", got, want)
	}
}

// TestPolledProgress drives the renderer as get does: bytes from the
// events, and a note about mirrors polled.
func TestPolledProgress(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	p, c := plainProgress(&buf, "getting")
	ev := p.events(nil)
	ev(finding.Planned{Bytes: 100 << 20})
	ev(finding.Progress{Bytes: 50 << 20})
	ms := []transfer.MirrorProgress{{Host: "a:80", Active: 4, State: "active"}, {Host: "b:80", State: "no-range"}}
	p.polledNote(func() string { return mirrorsNote(ms) })
	c.t = c.t.Add(5 * time.Second)
	p.tick()
	s := buf.String()
	if !strings.HasPrefix(s, "rsdump: getting: 50%, 50.0 MiB of 100.0 MiB, ") || !strings.HasSuffix(s, ", 1 of 2 mirrors active, 4 connections\n") {
		t.Errorf("line %q", s)
	}
	p.done()
}

// TestQuietProgress: --quiet draws nothing, but messages (warnings) print.
func TestQuietProgress(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	p := newProgress(&buf, true, "unpacking")
	p.grow(10)
	p.add(5, "")
	p.tick()
	p.done()
	if buf.Len() != 0 {
		t.Errorf("quiet progress printed %q", buf.String())
	}
	p.message("rsdump: warning: %s", "x")
	if buf.String() != "rsdump: warning: x\n" {
		t.Errorf("message %q", buf.String())
	}
}

// TestMetalinkDumpTotal: metalink of a dump document knows, before it
// hashes anything, how many bytes of packages beside the document it will
// read.
func TestMetalinkDumpTotal(t *testing.T) {
	t.Parallel()
	out := packedExample(t)
	zips, _ := filepath.Glob(filepath.Join(out, "*.zip"))
	var want int64
	for _, z := range zips {
		fi, _ := os.Stat(z)
		want += fi.Size()
	}
	if got := localPackagesSize(context.Background(), filepath.Join(out, layout.DumpName)); got != want || want == 0 {
		t.Errorf("total %d, want %d", got, want)
	}
}
