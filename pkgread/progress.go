package pkgread

import (
	"io"
	"os"

	"github.com/rsdump/rsdump/finding"
	"github.com/rsdump/rsdump/resourcesync"
)

// A Meter counts one package's share of a run's finding.Progress events in
// package bytes, so that they add up to the finding.Planned events of
// Announce and Opened: each bitstream's compressed size as it is
// read, and the rest (headers, manifest, central directory, bitstreams
// not read; a package missing or refused) when the package is done.
// verify and unpack both count this way.
type Meter struct {
	events func(finding.Event)
	want   int64 // bytes announced for the package; -1 until known
	got    int64
}

// NewMeter returns the Meter of the package ref for events (which may be
// nil).
func NewMeter(events func(finding.Event), ref PackageRef) *Meter {
	return &Meter{events: events, want: PlannedSize(ref)}
}

// PlannedSize is what a package will count toward the total: the length
// the dump document gives, or a local file's size; -1 when only opening
// the package will tell.
func PlannedSize(ref PackageRef) int64 {
	if ref.Length >= 0 {
		return ref.Length
	}
	if !resourcesync.IsURL(ref.Loc) {
		if fi, err := os.Stat(ref.Loc); err == nil && fi.Mode().IsRegular() {
			return fi.Size()
		}
	}
	return -1
}

// Announce sends events (which may be nil) the finding.Planned bytes of the
// packages known up front.
func Announce(refs []PackageRef, events func(finding.Event)) {
	var n int64
	for _, r := range refs {
		n += max(PlannedSize(r), 0)
	}
	if n > 0 {
		finding.Send(events, finding.Planned{Bytes: n})
	}
}

// Opened learns the size of a package that was not announced, and sends
// it to events as finding.Planned bytes.
func (m *Meter) Opened(size int64, events func(finding.Event)) {
	if m.want < 0 {
		m.want = size
		finding.Send(events, finding.Planned{Bytes: size})
	}
}

// Add counts n bytes, never more than the package's announced size.
func (m *Meter) Add(n int64) {
	if m.want >= 0 {
		n = min(n, m.want-m.got)
	}
	if m.events != nil && n > 0 {
		m.events(finding.Progress{Bytes: n})
		m.got += n
	}
}

// Finish reports the package's bytes not yet counted.
func (m *Meter) Finish() { m.Add(m.want - m.got) }

// Bitstream returns a writer that counts b's share of the package bytes
// (its compressed size) as its uncompressed bytes are written to it, so
// that a large file moves the progress while it is read, and done, which
// counts what is left of the share once b was read.
func (m *Meter) Bitstream(b *Bitstream) (w io.Writer, done func()) {
	bw := &bitstreamMeter{m: m, share: int64(b.File.CompressedSize64), size: int64(b.File.UncompressedSize64)}
	return bw, func() { m.Add(bw.share - bw.counted) }
}

type bitstreamMeter struct {
	m                *Meter
	share, size      int64
	written, counted int64
}

func (w *bitstreamMeter) Write(p []byte) (int, error) {
	w.written += int64(len(p))
	if w.size > 0 {
		c := min(w.share, int64(float64(w.share)*(float64(min(w.written, w.size))/float64(w.size))))
		w.m.Add(c - w.counted)
		w.counted = c
	}
	return len(p), nil
}
