package transfer

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"hash"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	mt "github.com/rsdump/rsdump/internal/mirrortest"
)

// readReleasing reads s from off to its end in reads of n bytes, as
// unpack does, releasing what it has read; peak is the most pieces the
// download held at once, seen before each read.
func readReleasing(t *testing.T, s *Streaming, off int64, n int) (out []byte, peak int) {
	t.Helper()
	buf := make([]byte, n)
	for off < s.Size() {
		s.mu.Lock()
		d := s.d
		s.mu.Unlock()
		if d != nil && d.mem != nil {
			d.mem.mu.Lock()
			peak = max(peak, len(d.mem.bufs))
			d.mem.mu.Unlock()
		}
		k, err := s.ReadAt(buf, off)
		out = append(out, buf[:k]...)
		off += int64(k)
		if err != nil && !(errors.Is(err, io.EOF) && off == s.Size()) {
			t.Fatalf("ReadAt %d: %v", off, err)
		}
		s.Release(off)
	}
	return out, peak
}

// A held download writes no .part: its reader gets every byte, checked,
// from memory, the memory stays within the window however large the file,
// and the server sends no more than the reader's position plus the window
// while the reader waits.
func TestStreamHeldKeepsNoPart(t *testing.T) {
	eachPath(t, func(t *testing.T) {
		data := payload(6<<20, 41)
		const plen = 64 << 10
		srv, m := serve(t, data)
		f := fileFor("f.bin", data, plen, srv.URL)
		dir := t.TempDir()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		o := fastOptions()
		o.HeldWindow = 512 << 10
		s := New(o).StreamHeld(ctx, dir, f, int64(len(data))-1)
		defer s.Close()
		head := make([]byte, 100<<10)
		if _, err := s.ReadAt(head, 0); err != nil {
			t.Fatal(err)
		}
		s.Release(int64(len(head)))
		time.Sleep(200 * time.Millisecond) // the engine runs on as far as the window lets it
		window := int64(max(int(o.HeldWindow/plen), 4)) * plen
		if sent, limit := m.Bytes.Load(), int64(len(head))+window+int64(o.Connections+1)*plen; sent > limit {
			t.Errorf("the server sent %d bytes while the reader stood at %d: more than the window allows (%d)", sent, len(head), limit)
		}
		got, peak := readReleasing(t, s, int64(len(head)), 100<<10)
		if !bytes.Equal(append(head, got...), data) {
			t.Fatal("the held file read differs")
		}
		if _, err := s.Wait(); err != nil {
			t.Fatal(err)
		}
		if limit := int(window/plen) + 2*o.Connections + 2; peak > limit {
			t.Errorf("held %d pieces at once, more than the window's %d", peak, limit)
		}
		for _, name := range []string{"f.bin", "f.bin.part", "f.bin.rsdump-state"} {
			if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
				t.Errorf("%s written by a held download", name)
			}
		}
	})
}

// A held download stopped mid-way leaves a checkpoint; the next run
// fetches only from there (the reader kept what came before and releases
// it) and its whole-file hash, restored, still checks the whole file.
func TestStreamHeldResumes(t *testing.T) {
	t.Parallel()
	data := payload(4<<20, 43)
	const plen = 128 << 10
	srv, m := serve(t, data, mt.RateLimit(8<<20))
	f := fileFor("f.bin", data, plen, srv.URL)
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	s := New(cancelAtHalf(fastOptions(), int64(len(data)), cancel)).StreamHeld(ctx, dir, f, -1)
	var kept []byte
	buf := make([]byte, 64<<10)
	for off := int64(0); ; {
		k, err := s.ReadAt(buf, off)
		if err != nil {
			break
		}
		kept = append(kept, buf[:k]...)
		off += int64(k)
		s.Release(off)
	}
	if _, err := s.Wait(); err == nil {
		t.Fatal("no error after cancel")
	}
	s.Close()
	st, err := loadState(filepath.Join(dir, "f.bin.rsdump-state"))
	if err != nil || st.Version != heldVersion || st.Frontier == 0 {
		t.Fatalf("no checkpoint after cancel: %+v %v", st, err)
	}
	first := m.Bytes.Load()

	ctx2, cancel2 := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel2()
	s = New(fastOptions()).StreamHeld(ctx2, dir, f, -1)
	defer s.Close()
	from := s.ResumedTo()
	if from == 0 {
		t.Fatal("the second run did not resume from the checkpoint")
	}
	// The reader had what came before start; the pieces between it and
	// the checkpoint are fetched again once it reads them.
	start := min(from, int64(len(kept)))
	s.Release(start)
	got, _ := readReleasing(t, s, start, 1<<20)
	if !bytes.Equal(append(kept[:start:start], got...), data) {
		t.Fatal("the resumed file differs")
	}
	res, err := s.Wait()
	if err != nil {
		t.Fatal(err)
	}
	again := m.Bytes.Load() - first
	inFlight := int64(fastOptions().Connections) * plen
	if want := start / plen * plen; res.Resumed != want || again > int64(len(data))-start+inFlight {
		t.Errorf("resumed %d bytes (want %d); the second run fetched %d, more than the %d the reader lacked plus %d in flight",
			res.Resumed, want, again, int64(len(data))-start, inFlight)
	}
}

// A checkpoint is a hint: one whose hash state is not that of the bytes
// before it makes the whole-file hash fail, so the run fails, takes
// nothing, removes it, and the next run starts over and succeeds.
func TestStreamHeldForgedCheckpoint(t *testing.T) {
	t.Parallel()
	data := payload(2<<20, 44)
	const plen = 128 << 10
	srv, _ := serve(t, data)
	f := fileFor("f.bin", data, plen, srv.URL)
	dir := t.TempDir()
	d := &download{f: f, plen: plen, n: len(f.Pieces.Hashes)}
	st := d.identity()
	st.Version, st.Frontier = heldVersion, 8
	h, _ := newHash("sha-256")
	h.Write(payload(8*plen, 45)) // not the file's first 8 pieces
	st.HashState, _ = saveHash(h)
	b, _ := json.Marshal(st)
	if err := os.WriteFile(filepath.Join(dir, "f.bin.rsdump-state"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	run := func() (int64, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		s := New(fastOptions()).StreamHeld(ctx, dir, f, -1)
		defer s.Close()
		from := s.ResumedTo()
		s.Release(from)
		buf := make([]byte, 256<<10)
		for off := from; off < s.Size(); off += int64(len(buf)) {
			if _, err := s.ReadAt(buf, off); err != nil && !errors.Is(err, io.EOF) {
				break // the download failed: Wait says why
			}
			s.Release(off + int64(len(buf)))
		}
		_, err := s.Wait()
		return from, err
	}
	if from, err := run(); from != 8*plen || !errors.Is(err, ErrFileHash) {
		t.Fatalf("forged checkpoint: resumed to %d, %v; want %d and a hash mismatch", from, err, 8*plen)
	}
	if from, err := run(); from != 0 || err != nil {
		t.Fatalf("the run after: resumed to %d, %v; want a fresh, good download", from, err)
	}
}

// slowHash sleeps on every write: a whole-file hash that falls behind.
type slowHash struct {
	hash.Hash
	d time.Duration
}

func (h slowHash) Write(b []byte) (int, error) {
	time.Sleep(h.d)
	return h.Hash.Write(b)
}

// A piece stays in memory until the whole-file hash has taken it in, and
// the window counts from the reader, not from the hash: a hash that falls
// behind (a busy CPU) must not let the pieces pile up. What bounds them is
// that a piece is verified under the hash's lock, so verification, and the
// reader with it, goes at the hash's pace; sampled every 200 µs, the
// pieces held stay within the window.
func TestStreamHeldBoundedWhileHashLags(t *testing.T) {
	defer func() { testWholeHash = nil }()
	testWholeHash = func(h hash.Hash) hash.Hash { return slowHash{h, 3 * time.Millisecond} }
	data := payload(8<<20, 47)
	const plen = 32 << 10
	srv, _ := serve(t, data)
	f := fileFor("f.bin", data, plen, srv.URL)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	o := fastOptions()
	o.HeldWindow = 256 << 10
	s := New(o).StreamHeld(ctx, t.TempDir(), f, -1)
	defer s.Close()
	var most atomic.Int64
	stop := make(chan struct{})
	go func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(200 * time.Microsecond):
			}
			s.mu.Lock()
			d := s.d
			s.mu.Unlock()
			if d != nil && d.mem != nil {
				d.mem.mu.Lock()
				if n := int64(len(d.mem.bufs)); n > most.Load() {
					most.Store(n)
				}
				d.mem.mu.Unlock()
			}
		}
	}()
	got, peak := readReleasing(t, s, 0, 64<<10)
	close(stop)
	peak = max(peak, int(most.Load()))
	if !bytes.Equal(got, data) {
		t.Fatal("the held file read differs")
	}
	if _, err := s.Wait(); err != nil {
		t.Fatal(err)
	}
	window := max(int(o.HeldWindow/plen), 4)
	t.Logf("peak %d pieces held, window %d, %d pieces", peak, window, len(f.Pieces.Hashes))
	if limit := window + 2*o.Connections + 2; peak > limit {
		t.Errorf("held %d pieces at once while the hash lagged, more than the window's %d", peak, limit)
	}
}

// gatedHash lets the first free bytes through, then holds every Write
// until open is closed; blocked is closed when the first one waits.
type gatedHash struct {
	hash.Hash
	free    *atomic.Int64
	once    *sync.Once
	blocked chan struct{}
	open    chan struct{}
}

func (h gatedHash) Write(b []byte) (int, error) {
	if h.free.Add(-int64(len(b))) < 0 {
		h.once.Do(func() { close(h.blocked) })
		<-h.open
	}
	return h.Hash.Write(b)
}

// The reader releasing bytes does not wait for the whole-file hash, which
// holds its lock while it takes pieces in: unpack's one staging goroutine
// releases the package as it goes, and waited there for pieces being
// hashed on other goroutines (a quarter of a second of a 3 s sync). Here
// the hash stops on its third piece; Release must return all the same.
func TestStreamHeldReleaseWithoutHash(t *testing.T) {
	const plen = 64 << 10
	free := new(atomic.Int64)
	free.Store(2 * plen)
	g := gatedHash{free: free, once: new(sync.Once), blocked: make(chan struct{}), open: make(chan struct{})}
	defer func() { testWholeHash = nil }()
	testWholeHash = func(h hash.Hash) hash.Hash { g.Hash = h; return g }
	data := payload(2<<20, 53)
	srv, _ := serve(t, data)
	f := fileFor("f.bin", data, plen, srv.URL)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s := New(fastOptions()).StreamHeld(ctx, t.TempDir(), f, -1)
	defer s.Close()
	select {
	case <-g.blocked:
	case <-ctx.Done():
		t.Fatal("the whole-file hash never took a third piece")
	}
	released := make(chan struct{})
	go func() {
		s.Release(plen)
		close(released)
	}()
	select {
	case <-released:
	case <-time.After(5 * time.Second):
		t.Error("Release waited for the whole-file hash")
	}
	close(g.open)
	<-released
	got, _ := readReleasing(t, s, plen, 100<<10)
	if !bytes.Equal(got, data[plen:]) {
		t.Fatal("the held file read differs")
	}
	if _, err := s.Wait(); err != nil {
		t.Fatal(err)
	}
}
