package transfer

import (
	"context"
	"encoding/hex"
	"testing"
	"time"

	"github.com/rsdump/rsdump/internal/digest"
	mt "github.com/rsdump/rsdump/internal/mirrortest"
)

// Pieces finishing out of order from mirrors of different speeds still
// reach the whole-file hash from memory, in the pass that checks them:
// few are read back from the file.
func TestWholeHashFromBuffers(t *testing.T) {
	t.Parallel()
	data := payload(8<<20, 60)
	a, _ := serve(t, data, mt.RateLimit(8<<20))
	b, _ := serve(t, data, mt.RateLimit(6<<20), mt.Latency(5*time.Millisecond))
	c, _ := serve(t, data, mt.RateLimit(3<<20))
	dir := t.TempDir()
	d, err := New(fastOptions()).newDownload(dir, fileFor("f.bin", data, plen, a.URL, b.URL, c.URL))
	if err != nil {
		t.Fatal(err)
	}
	d.root = openTestRoot(t, dir)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := d.run(ctx); err != nil {
		t.Fatal(err)
	}
	mustMatch(t, dir, "f.bin", data)
	if d.whole.readBack > d.n/10 {
		t.Errorf("%d of %d pieces read back for the whole-file hash", d.whole.readBack, d.n)
	}
	t.Logf("%d of %d pieces read back", d.whole.readBack, d.n)
}

// A whole-file hash whose state cannot be saved (blake3) is taken in
// piece by piece too, and a corrupt piece never reaches it: the file
// comes out whole although one mirror corrupts a fifth of its blocks.
func TestWholeHashBlake3(t *testing.T) {
	data := payload(2<<20+999, 61)
	h, _ := digest.New(digest.BLAKE3)
	h.Write(data)
	bad, _ := serve(t, data, mt.Corrupt(0.2, plen))
	good, _ := serve(t, data, mt.RateLimit(8<<20))
	f := fileFor("f.bin", data, plen, bad.URL, good.URL)
	f.HashAlg, f.Hash = digest.BLAKE3, hex.EncodeToString(h.Sum(nil))
	eachPath(t, func(t *testing.T) {
		dir := t.TempDir()
		if _, err := get(t, fastOptions(), dir, f); err != nil {
			t.Fatal(err)
		}
		mustMatch(t, dir, "f.bin", data)
	})
}

// A body received in full ends its mirror's run of failures at once,
// though the piece may wait for its whole-file turn before it completes:
// a mirror answering 503 now and then must not be backed off for
// failures "in a row" that waiting successes separate.
func TestHangUpEndsFailureRun(t *testing.T) {
	t.Parallel()
	data := payload(4*plen, 62)
	s, _ := serve(t, data)
	g := New(fastOptions())
	d, err := g.newDownload(t.TempDir(), fileFor("f.bin", data, plen, s.URL))
	if err != nil {
		t.Fatal(err)
	}
	d.ctx, d.cancel = context.WithCancel(context.Background())
	defer d.cancel()
	m := d.mirrors[0]
	m.fails, m.notUntil = 2, time.Now().Add(time.Hour)
	if err := g.budget.acquire(d.ctx); err != nil || !g.budget.tryHost(m.host) {
		t.Fatal("no budget")
	}
	d.mu.Lock()
	a := d.start(m, 2, false)
	d.mu.Unlock()
	d.hangUp(a)
	if m.fails != 0 || !m.notUntil.IsZero() || m.active != 0 {
		t.Errorf("after hangUp: fails %d, notUntil %v, active %d; want 0, zero, 0", m.fails, m.notUntil, m.active)
	}
}
