//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package serve_test

import (
	"context"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rsdump/rsdump/serve"
)

// Neither route opens a FIFO, a socket or a device: each is answered 404
// at once, however many times it is asked for, and no request is left
// holding a goroutine (or a thread blocked in open), so Shutdown is
// quick. Opening a FIFO for reading blocks until a writer comes.
func TestRefusesSpecialFiles(t *testing.T) {
	t.Parallel()
	ts, u := listen(t)
	src, dir := packTree(t, files(3), u)
	s := startSite(t, ts, u, src, dir, serve.Options{Resources: src})
	fifos := []string{filepath.Join(src, "pipe"), filepath.Join(src, "d0", "pipe.bin"), filepath.Join(s.Dir, "changelist.xml")}
	for _, p := range fifos {
		if err := syscall.Mkfifo(p, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Should a request block in open, a writer lets it go, so that the
	// test ends.
	t.Cleanup(func() {
		for _, p := range fifos {
			if f, err := os.OpenFile(p, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
				f.Close()
			}
		}
	})
	ln, err := net.Listen("unix", filepath.Join(src, "sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	paths := []string{"/res/pipe", "/res/d0/pipe.bin", "/dump/changelist.xml", "/res/sock"}
	// A device, where the test may make one (as root).
	if syscall.Mknod(filepath.Join(src, "null"), syscall.S_IFCHR|0o666, 1<<8|3) == nil {
		paths = append(paths, "/res/null")
	}
	client := &http.Client{Timeout: 3 * time.Second}
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			p := paths[i%len(paths)]
			start := time.Now()
			resp, err := client.Get(s.URL + p)
			if err != nil {
				t.Errorf("%s: %v", p, err)
				return
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusNotFound || time.Since(start) > time.Second {
				t.Errorf("%s: %s after %s", p, resp.Status, time.Since(start))
			}
		})
	}
	wg.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := s.srv.Config.Shutdown(ctx); err != nil {
		t.Errorf("shutdown: %v: requests still running", err)
	}
}
