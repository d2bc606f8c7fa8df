package serve_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/rsdump/rsdump/serve"
)

// 200 ranged GETs at once, all open together (each has read its headers
// and waits before reading on), while a HEAD is answered within a bounded
// time; then every body is read and compared with the package's bytes.
func TestManyConcurrentRanges(t *testing.T) {
	t.Parallel()
	const clients, rangeLen = 200, 512 << 10
	rng := rand.New(rand.NewPCG(1, 2))
	big := make([]byte, 8<<20)
	for i := range big {
		big[i] = byte(rng.Uint32())
	}
	s := newSite(t, map[string]string{"big.bin": string(big)}, serve.Options{})
	var name string
	var data []byte
	for _, n := range packages(t, s.Dir) {
		if b := readFile(t, filepath.Join(s.Dir, n)); len(b) > len(data) {
			name, data = n, b
		}
	}
	u := s.URL + "/dump/" + name
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	tr := &http.Transport{MaxConnsPerHost: 0, MaxIdleConnsPerHost: clients, DisableCompression: true}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}

	var started, done sync.WaitGroup
	release := make(chan struct{})
	errs := make(chan error, clients)
	started.Add(clients)
	done.Add(clients)
	for range clients {
		off := int64(rng.IntN(len(data) - rangeLen))
		go func() {
			defer done.Done()
			errs <- fetchRange(ctx, client, u, data, off, rangeLen, &started, release)
		}()
	}
	waitOrFail(t, &started, 30*time.Second, "200 ranged responses to start")

	head, cancelHead := context.WithTimeout(ctx, 5*time.Second)
	defer cancelHead()
	req, _ := http.NewRequestWithContext(head, http.MethodHead, u, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("HEAD while 200 ranges are open: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.ContentLength != int64(len(data)) || resp.Header.Get("Digest") == "" {
		t.Errorf("HEAD: %s, %d bytes, Digest %q", resp.Status, resp.ContentLength, resp.Header.Get("Digest"))
	}
	close(release)
	done.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	ranged := 0
	for _, r := range s.logs.all() {
		if r.Range != "" && r.Status == http.StatusPartialContent && r.Bytes == rangeLen {
			ranged++
		}
	}
	if ranged != clients {
		t.Errorf("%d ranged requests logged as 206 with all their bytes, want %d", ranged, clients)
	}
}

// fetchRange asks for len bytes at off, reads the first byte, signals
// started and waits for release before reading the rest.
func fetchRange(ctx context.Context, c *http.Client, u string, data []byte, off, n int64, started *sync.WaitGroup, release chan struct{}) error {
	once := sync.OnceFunc(started.Done)
	defer once()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	req.Header.Set("Range", fmt.Sprintf("bytes=%d-%d", off, off+n-1))
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	first := make([]byte, 1)
	if _, err := io.ReadFull(resp.Body, first); err != nil {
		return err
	}
	once()
	select {
	case <-release:
	case <-ctx.Done():
		return ctx.Err()
	}
	rest, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if got := append(first, rest...); resp.StatusCode != http.StatusPartialContent || !bytes.Equal(got, data[off:off+n]) {
		return fmt.Errorf("range at %d: %s, %d bytes, not the package's", off, resp.Status, len(got))
	}
	return nil
}

func waitOrFail(t *testing.T, wg *sync.WaitGroup, d time.Duration, what string) {
	t.Helper()
	ch := make(chan struct{})
	go func() { wg.Wait(); close(ch) }()
	select {
	case <-ch:
	case <-time.After(d):
		t.Fatalf("timed out after %s waiting for %s", d, what)
	}
}
