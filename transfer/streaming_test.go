package transfer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	mt "github.com/rsdump/rsdump/internal/mirrortest"
)

// readAll reads s front to back in reads of n bytes, as pkgread does.
func readAll(t *testing.T, s *Streaming, n int) []byte {
	t.Helper()
	out := make([]byte, 0, s.Size())
	buf := make([]byte, n)
	for off := int64(0); off < s.Size(); {
		k, err := s.ReadAt(buf, off)
		out = append(out, buf[:k]...)
		off += int64(k)
		if err != nil && !(errors.Is(err, io.EOF) && off == s.Size()) {
			t.Fatalf("ReadAt %d: %v", off, err)
		}
	}
	return out
}

// A reader that starts at the end (a ZIP's central directory) gets it
// while the rest of the file is still held back by the server: the
// pieces it waits for are fetched first.
func TestStreamTailFirst(t *testing.T) {
	t.Parallel()
	data := payload(4<<20, 31)
	const plen = 256 << 10
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var first int64
		fmt.Sscanf(r.Header.Get("Range"), "bytes=%d-", &first)
		if first < int64(len(data))-plen {
			select {
			case <-release:
			case <-r.Context().Done():
				return
			}
		}
		http.ServeContent(w, r, "f.bin", time.Time{}, bytes.NewReader(data))
	}))
	defer srv.Close()
	defer srv.CloseClientConnections()
	f := fileFor("f.bin", data, plen, srv.URL+"/f.bin")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	dir := t.TempDir()
	o := fastOptions()
	o.Connections, o.PerMirror, o.StallTimeout = 3, 3, 10*time.Second // every slot but one held
	s := New(o).Stream(ctx, dir, f, int64(len(data))-1000)
	defer s.Close()
	tail := make([]byte, 1000)
	readDone := make(chan error, 1)
	go func() { _, err := s.ReadAt(tail, int64(len(data))-1000); readDone <- err }()
	select {
	case err := <-readDone:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the file's last bytes were not readable while the rest was held back")
	}
	if !bytes.Equal(tail, data[len(data)-1000:]) {
		t.Fatal("the tail read differs from the file's")
	}
	close(release)
	if got := readAll(t, s, 100<<10); !bytes.Equal(got, data) {
		t.Fatal("the file read while it downloaded differs")
	}
	if _, err := s.Wait(); err != nil {
		t.Fatal(err)
	}
	s.Close()
	mustMatch(t, dir, "f.bin", data)
}

// Bytes read from a Streaming are verified ones: a mirror that corrupts
// a third of the pieces never gets a corrupt byte to the reader, on
// either path pieces take, from a .part (Stream) or held in memory
// (StreamHeld, whose reader releases what it read).
func TestStreamReadsOnlyVerified(t *testing.T) {
	for _, held := range []bool{false, true} {
		t.Run(map[bool]string{false: "part", true: "held"}[held], func(t *testing.T) {
			eachPath(t, func(t *testing.T) {
				data := payload(3<<20, 32)
				const plen = 128 << 10
				bad, bm := serve(t, data, mt.Corrupt(0.34, plen))
				good, _ := serve(t, data, mt.RateLimit(4<<20))
				f := fileFor("f.bin", data, plen, bad.URL, good.URL)
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				defer cancel()
				g := New(fastOptions())
				stream := g.Stream // one stream only: one started and dropped went on writing into its directory after the test
				if held {
					stream = g.StreamHeld
				}
				s := stream(ctx, t.TempDir(), f, 0)
				defer s.Close()
				if got, _ := readReleasing(t, s, 0, 64<<10); !bytes.Equal(got, data) {
					t.Fatal("a corrupt byte reached the reader")
				}
				res, err := s.Wait()
				if err != nil {
					t.Fatal(err)
				}
				if bm.Bytes.Load() == 0 || mirrorResult(t, res, bad.URL).Bad == 0 {
					t.Errorf("the corrupting mirror served %d bytes, %d pieces refused: the test did not test", bm.Bytes.Load(), mirrorResult(t, res, bad.URL).Bad)
				}
			})
		})
	}
}

// A Streaming stopped mid-way leaves its verified pieces for the next,
// which reads them without fetching them again.
func TestStreamResumes(t *testing.T) {
	t.Parallel()
	data := payload(4<<20, 33)
	const plen = 128 << 10
	srv, m := serve(t, data, mt.RateLimit(8<<20))
	f := fileFor("f.bin", data, plen, srv.URL)
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	s := New(cancelAtHalf(fastOptions(), int64(len(data)), cancel)).Stream(ctx, dir, f, 0)
	if _, err := s.Wait(); err == nil {
		t.Fatal("no error after cancel")
	}
	s.Close()
	if _, err := loadState(filepath.Join(dir, "f.bin.rsdump-state")); err != nil {
		t.Fatalf("no state after cancel: %v", err)
	}
	first := m.Bytes.Load()
	ctx2, cancel2 := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel2()
	s = New(fastOptions()).Stream(ctx2, dir, f, 0)
	defer s.Close()
	if got := readAll(t, s, 1<<20); !bytes.Equal(got, data) {
		t.Fatal("the resumed file differs")
	}
	res, err := s.Wait()
	if err != nil {
		t.Fatal(err)
	}
	again := m.Bytes.Load() - first
	inFlight := int64(fastOptions().Connections) * plen
	if res.Resumed < int64(len(data))/2 || again > int64(len(data))-first+inFlight {
		t.Errorf("resumed %d bytes; the second run fetched %d, more than the %d the first did not plus %d in flight",
			res.Resumed, again, int64(len(data))-first, inFlight)
	}
}

// A file that cannot be fetched fails its reads with the download's
// error, which names the mirror.
func TestStreamFailureReachesReader(t *testing.T) {
	t.Parallel()
	data := payload(1<<20, 34)
	srv, _ := serve(t, data, mt.Status(http.StatusNotFound, 1, ""))
	f := fileFor("f.bin", data, 128<<10, srv.URL)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s := New(fastOptions()).Stream(ctx, t.TempDir(), f, 0)
	defer s.Close()
	_, err := s.ReadAt(make([]byte, 10), 0)
	if err == nil || !strings.Contains(err.Error(), srv.URL) {
		t.Fatalf("read of a file no mirror has: %v", err)
	}
	if _, werr := s.Wait(); werr == nil || werr.Error() != err.Error() {
		t.Errorf("Wait: %v, want the read's %v", werr, err)
	}
}
