package transfer

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rsdump/rsdump/finding"
	mt "github.com/rsdump/rsdump/internal/mirrortest"
)

// Cancelling mid-way (SIGINT) saves the state; the next run fetches only
// what was missing.
func TestCancelThenResume(t *testing.T) {
	eachPath(t, func(t *testing.T) {
		data := payload(4<<20, 20)
		s, m := serve(t, data, mt.RateLimit(8<<20))
		f := fileFor("f.bin", data, plen, s.URL)
		dir := t.TempDir()
		ctx, cancel := context.WithCancel(context.Background())
		g := New(cancelAtHalf(fastOptions(), int64(len(data)), cancel))
		_, err := g.Get(ctx, dir, []File{f})
		if err == nil {
			t.Fatal("no error after cancel")
		}
		st, err := loadState(filepath.Join(dir, "f.bin.rsdump-state"))
		if err != nil {
			t.Fatalf("no state after cancel: %v", err)
		}
		res, err := get(t, fastOptions(), dir, f)
		if err != nil {
			t.Fatal(err)
		}
		mustMatch(t, dir, "f.bin", data)
		refetched := m.Bytes.Load() - int64(len(data))
		if res[0].Resumed < int64(len(data))/2 || refetched > int64(len(data))/8 {
			t.Errorf("resumed %d, fetched %d bytes more than the file (state had %d bytes of bitmap)", res[0].Resumed, refetched, len(st.Done))
		}
	})
}

// With a .part and no state (or a stale one), good pieces on disk are
// found by rehashing and kept.
func TestRehashWithoutState(t *testing.T) {
	t.Parallel()
	for _, stale := range []bool{false, true} {
		data := payload(1<<20, 21)
		s, m := serve(t, data)
		dir := t.TempDir()
		part := make([]byte, len(data))
		copy(part[:len(data)/2], data) // first half good
		part[10] ^= 1                  // but piece 0 bad
		os.WriteFile(filepath.Join(dir, "f.bin.part"), part, 0o644)
		if stale {
			os.WriteFile(filepath.Join(dir, "f.bin.rsdump-state"), []byte(`{"version":1,"size":5,"done":"/w=="}`), 0o644)
		}
		res, err := get(t, fastOptions(), dir, fileFor("f.bin", data, plen, s.URL))
		if err != nil {
			t.Fatal(err)
		}
		mustMatch(t, dir, "f.bin", data)
		if want := int64(len(data)/2 - plen); res[0].Resumed != want {
			t.Errorf("stale=%v: resumed %d, want %d", stale, res[0].Resumed, want)
		}
		if got := m.Bytes.Load(); got != int64(len(data)/2+plen) {
			t.Errorf("stale=%v: fetched %d bytes", stale, got)
		}
	}
}

// Without piece hashes a .part with no state cannot be trusted.
func TestNoPieceHashesNoStateStartsOver(t *testing.T) {
	t.Parallel()
	data := payload(300<<10, 22)
	s, m := serve(t, data)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "f.bin.part"), make([]byte, len(data)), 0o644)
	if _, err := get(t, fastOptions(), dir, fileFor("f.bin", data, 0, s.URL)); err != nil {
		t.Fatal(err)
	}
	mustMatch(t, dir, "f.bin", data)
	if m.Bytes.Load() != int64(len(data)) {
		t.Errorf("fetched %d bytes", m.Bytes.Load())
	}
}

func TestSkipComplete(t *testing.T) {
	t.Parallel()
	data := payload(100<<10, 23)
	s, m := serve(t, data)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "f.bin"), data, 0o644)
	res, err := get(t, fastOptions(), dir, fileFor("f.bin", data, plen, s.URL))
	if err != nil || !res[0].Skipped || m.Requests.Load() != 0 {
		t.Fatalf("err %v, skipped %v, %d requests", err, res[0].Skipped, m.Requests.Load())
	}
	// A file of the right size but the wrong bytes is replaced.
	os.WriteFile(filepath.Join(dir, "f.bin"), make([]byte, len(data)), 0o644)
	if res, err = get(t, fastOptions(), dir, fileFor("f.bin", data, plen, s.URL)); err != nil || res[0].Skipped {
		t.Fatalf("err %v, skipped %v", err, res[0].Skipped)
	}
	mustMatch(t, dir, "f.bin", data)
}

func TestEmptyFile(t *testing.T) {
	t.Parallel()
	s, _ := serve(t, nil)
	dir := t.TempDir()
	if _, err := get(t, fastOptions(), dir, fileFor("e.bin", nil, plen, s.URL)); err != nil {
		t.Fatal(err)
	}
	mustMatch(t, dir, "e.bin", nil)
}

// countingMirror wraps a handler to record the peak of concurrent requests.
type peak struct {
	mu        sync.Mutex
	cur, high int
}

func (p *peak) add(d int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cur += d
	p.high = max(p.high, p.cur)
}

// Several files download at once within one connection budget, counted
// per host:port even when two URLs name the same server.
func TestSeveralFilesOneBudget(t *testing.T) {
	t.Parallel()
	var pk peak
	var files []File
	var datas [][]byte
	hold := mt.Latency(2 * time.Millisecond)
	for i := range 4 {
		data := payload(400<<10, uint64(30+i))
		s, _ := serve(t, data, hold, mt.RateLimit(16<<20))
		files = append(files, fileFor(string(rune('a'+i))+".bin", data, plen, s.URL, s.URL+"?again"))
		datas = append(datas, data)
	}
	o := fastOptions()
	o.Connections, o.PerMirror = 3, 2
	o.Client = &http.Client{Transport: countTransport{http.DefaultTransport, &pk}}
	dir := t.TempDir()
	if _, err := get(t, o, dir, files...); err != nil {
		t.Fatal(err)
	}
	for i, f := range files {
		mustMatch(t, dir, f.Name, datas[i])
	}
	pk.mu.Lock()
	defer pk.mu.Unlock()
	if pk.high > 3 {
		t.Errorf("%d concurrent requests, budget 3", pk.high)
	}
}

// End game: the last piece, stuck on a slow mirror, is duplicated on the
// fast one instead of waiting.
func TestEndGameDuplicatesSlowTail(t *testing.T) {
	eachPath(t, func(t *testing.T) {
		data := payload(1<<20, 40)
		slow, _ := serve(t, data, mt.RateLimit(40<<10)) // a 64 KiB piece takes 1.6 s
		fast, _ := serve(t, data, mt.RateLimit(8<<20), mt.Latency(5*time.Millisecond))
		o := fastOptions()
		o.StallTimeout = time.Minute
		start := time.Now()
		dir := t.TempDir()
		res, err := get(t, o, dir, fileFor("f.bin", data, plen, fast.URL, slow.URL))
		if err != nil {
			t.Fatal(err)
		}
		mustMatch(t, dir, "f.bin", data)
		if el := time.Since(start); el > time.Second {
			t.Errorf("took %v: the slow mirror's pieces were not duplicated (%+v)", el, res[0].Mirrors)
		}
	})
}

// countTransport counts requests from sending to closing the body.
type countTransport struct {
	rt http.RoundTripper
	p  *peak
}

func (c countTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.p.add(1)
	resp, err := c.rt.RoundTrip(r)
	if err != nil {
		c.p.add(-1)
		return nil, err
	}
	resp.Body = &countBody{ReadCloser: resp.Body, p: c.p}
	return resp, nil
}

type countBody struct {
	io.ReadCloser
	p    *peak
	once sync.Once
}

func (b *countBody) Close() error {
	b.once.Do(func() { b.p.add(-1) })
	return b.ReadCloser.Close()
}

// A complete file is skipped only when a hash vouches for it: the piece
// hashes when there is no whole-file hash; with no hash at all it is
// fetched again, since its size says nothing about its bytes.
func TestSkipOnlyWhatAHashVouchesFor(t *testing.T) {
	t.Parallel()
	data := payload(200<<10, 24)
	s, m := serve(t, data)
	for _, pl := range []int64{plen, 0} {
		f := fileFor("f.bin", data, pl, s.URL)
		f.HashAlg, f.Hash = "", ""
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, "f.bin"), make([]byte, len(data)), 0o644) // right size, wrong bytes
		res, err := get(t, fastOptions(), dir, f)
		if err != nil || res[0].Skipped {
			t.Fatalf("piece length %d: err %v, skipped %v", pl, err, res[0].Skipped)
		}
		mustMatch(t, dir, "f.bin", data)
	}
	// The right bytes are found by their piece hashes.
	f := fileFor("f.bin", data, plen, s.URL)
	f.HashAlg, f.Hash = "", ""
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "f.bin"), data, 0o644)
	before := m.Requests.Load()
	if res, err := get(t, fastOptions(), dir, f); err != nil || !res[0].Skipped || m.Requests.Load() != before {
		t.Fatalf("err %v, skipped %v, %d requests", err, res[0].Skipped, m.Requests.Load()-before)
	}
}

// An empty file with a stale, non-empty .part and a state that marks its
// one piece done: the piece counts once and the download ends.
func TestEmptyFileStalePart(t *testing.T) {
	t.Parallel()
	s, _ := serve(t, nil)
	dir := t.TempDir()
	f := fileFor("e.bin", nil, plen, s.URL)
	g := New(fastOptions())
	d, err := g.newDownload(dir, f)
	if err != nil {
		t.Fatal(err)
	}
	st := d.identity()
	st.Done = []byte{1}
	b, _ := json.Marshal(st)
	os.WriteFile(d.statePath, b, 0o644)
	os.WriteFile(d.partPath, []byte("stale"), 0o644)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := g.Get(ctx, dir, []File{f}); err != nil {
		t.Fatal(err)
	}
	mustMatch(t, dir, "e.bin", nil)
}

// A Scratch download saves its state without syncing the .part, so a
// power loss can leave a state that claims pieces whose bytes never
// reached the disk. The next run must not trust them: with piece hashes
// each is hashed again, with only a whole-file hash the file starts over
// when that hash fails, and a file published unsynced whose bytes were
// lost is fetched again. The lost bytes are simulated by zeroing the
// .part (or the published file) under a state saved by a real run.
func TestScratchLostBytesAreNotTrusted(t *testing.T) {
	t.Parallel()
	for _, pl := range []int64{plen, 0} {
		data := payload(2<<20, 25)
		s, _ := serve(t, data, mt.RateLimit(8<<20))
		f := fileFor("f.bin", data, pl, s.URL)
		dir := t.TempDir()
		o := fastOptions()
		o.Scratch = true
		ctx, cancel := context.WithCancel(context.Background())
		g := New(cancelAtHalf(o, int64(len(data)), cancel))
		if _, err := g.Get(ctx, dir, []File{f}); err == nil {
			t.Fatalf("piece length %d: no error after cancel", pl)
		}
		if _, err := loadState(filepath.Join(dir, "f.bin.rsdump-state")); err != nil {
			t.Fatalf("piece length %d: no state after cancel: %v", pl, err)
		}
		zero(t, filepath.Join(dir, "f.bin.part"), len(data))
		res, err := get(t, o, dir, f)
		if err != nil {
			t.Fatalf("piece length %d: %v", pl, err)
		}
		mustMatch(t, dir, "f.bin", data)
		if pl > 0 && res[0].Resumed != 0 {
			t.Errorf("piece length %d: %d bytes of zeros taken as resumed", pl, res[0].Resumed)
		}
		// Published, then lost: found wrong, fetched again.
		zero(t, filepath.Join(dir, "f.bin"), len(data))
		if res, err = get(t, o, dir, f); err != nil || res[0].Skipped {
			t.Fatalf("piece length %d: err %v, skipped %v", pl, err, res[0].Skipped)
		}
		mustMatch(t, dir, "f.bin", data)
	}
}

func zero(t *testing.T, name string, n int) {
	t.Helper()
	if err := os.WriteFile(name, make([]byte, n), 0o644); err != nil {
		t.Fatal(err)
	}
}

// cancelAtHalf returns o with Events that cancel once half of size bytes
// are done.
func cancelAtHalf(o Options, size int64, cancel context.CancelFunc) Options {
	var done atomic.Int64
	o.Events = func(e finding.Event) {
		if p, ok := e.(finding.Progress); ok && done.Add(p.Bytes) >= size/2 {
			cancel()
		}
	}
	return o
}
