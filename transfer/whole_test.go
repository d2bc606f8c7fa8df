package transfer

import (
	"context"
	"encoding/hex"
	"testing"
	"time"

	"github.com/rsdump/rsdump/internal/digest"
	mt "github.com/rsdump/rsdump/transfer/mirrortest"
)

// Pieces finishing out of order from mirrors of different speeds still
// reach the whole-file hash from memory, in the pass that checks them:
// few are read back from the file.
func TestWholeHashFromBuffers(t *testing.T) {
	data := payload(8<<20, 60)
	a, _ := serve(t, data, mt.RateLimit(8<<20))
	b, _ := serve(t, data, mt.RateLimit(6<<20), mt.Latency(5*time.Millisecond))
	c, _ := serve(t, data, mt.RateLimit(3<<20))
	dir := t.TempDir()
	d, err := New(fastOptions()).newDownload(dir, fileFor("f.bin", data, plen, a.URL, b.URL, c.URL))
	if err != nil {
		t.Fatal(err)
	}
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
