package transfer

import (
	"context"
	"os"
	"testing"
	"time"
)

// A write to the .part that fails while an end-game copy of the same
// piece wins must fail the file, not deadlock: the primary copy holds the
// piece's write lock when its write fails, while finish holds the
// download's lock and waits for the write lock to store the duplicate.
// (Pieces streamed into the file: a buffered copy writes only once whole.)
func TestWriteFailureDuringEndGame(t *testing.T) {
	defer func(v int64) { maxBuffered = v }(maxBuffered)
	maxBuffered = 0
	data := payload(2*plen, 50)
	s, _ := serve(t, data)
	d, err := New(fastOptions()).newDownload(t.TempDir(), fileFor("f.bin", data, plen, s.URL, s.URL+"?b"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(d.partPath, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	d.part, err = os.Open(d.partPath) // read-only: every write fails
	if err != nil {
		t.Fatal(err)
	}
	defer d.part.Close()
	d.ctx, d.cancel = context.WithCancel(context.Background())
	defer d.cancel()
	d.mu.Lock()
	primary := d.start(d.mirrors[0], 0, false)
	dup := d.start(d.mirrors[1], 0, true)
	dup.buf = data[:plen]
	// finish holds d.mu from here to writeDup; meanwhile the primary
	// copy receives its first bytes and fails to write them.
	attempted := make(chan error, 1)
	go func() { attempted <- d.runAttempt(primary) }()
	for primary.got.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond) // the write fails; d.mu is wanted
	stored := make(chan bool, 1)
	go func() { stored <- d.writeDup(dup, &d.pieces[0]) }()
	select {
	case ok := <-stored:
		if ok {
			t.Error("the duplicate was stored into a read-only .part")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("deadlock: writeDup waits for the write lock the failed primary write holds")
	}
	failed := d.err
	d.mu.Unlock()
	select {
	case <-attempted:
	case <-time.After(5 * time.Second):
		t.Fatal("the primary copy never returned")
	}
	if failed == nil {
		t.Error("the failed write did not fail the file")
	}
}

// A piece longer than maxDupPiece never gets an end-game copy, which
// would be held in memory whole; a shorter one does.
func TestNoDuplicateOfHugePieces(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		plen int64
		dup  bool
	}{{1 << 20, true}, {4 * maxDupPiece, false}} {
		f := File{Name: "f.bin", Size: 2 * tc.plen, Pieces: Pieces{Type: "sha-256", Length: tc.plen, Hashes: []string{"00", "00"}},
			Mirrors: []Mirror{{URL: "http://slow.example/f"}, {URL: "http://fast.example/f"}}}
		d, err := New(fastOptions()).newDownload(t.TempDir(), f)
		if err != nil {
			t.Fatal(err)
		}
		d.ctx, d.cancel = context.WithCancel(context.Background())
		slow, fast := d.mirrors[0], d.mirrors[1]
		slow.rate, fast.rate = 1<<10, 1<<30
		d.mu.Lock()
		for i := range d.n {
			d.start(slow, i, false)
		}
		// A minute later nothing has arrived from the slow mirror.
		i, dup := d.pickPiece(fast, time.Now().Add(time.Minute))
		d.mu.Unlock()
		d.cancel()
		if got := i >= 0 && dup; got != tc.dup {
			t.Errorf("pieces of %d bytes: duplicate %v (piece %d), want %v", tc.plen, got, i, tc.dup)
		}
	}
}
