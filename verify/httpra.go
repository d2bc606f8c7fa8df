package verify

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/rsdump/rsdump/internal/httpc"
)

// blockSize is what one Range request fetches. Packages are read front to
// back, so each block is fetched once; memory per remote package is one
// block.
const blockSize = 4 << 20

// httpReaderAt reads a remote package with Range requests, so that verify
// checks it without writing it anywhere.
type httpReaderAt struct {
	ctx    context.Context
	client *http.Client
	url    string
	size   int64

	mu    sync.Mutex
	off   int64
	block []byte
}

// openHTTP fetches the first block and learns the size from Content-Range.
// A server that ignores Range is refused: the package would have to be
// downloaded whole first, which is unpack's job, not verify's.
func openHTTP(ctx context.Context, client *http.Client, loc string) (*httpReaderAt, error) {
	h := &httpReaderAt{ctx: ctx, client: client, url: loc, size: -1}
	if err := h.fetch(0); err != nil {
		return nil, err
	}
	return h, nil
}

func (h *httpReaderAt) ReadAt(p []byte, off int64) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for n < len(p) {
		at := off + int64(n)
		if at >= h.size {
			return n, io.EOF
		}
		if at < h.off || at >= h.off+int64(len(h.block)) {
			if err := h.fetch(at); err != nil {
				return n, err
			}
			if len(h.block) == 0 {
				return n, io.ErrUnexpectedEOF
			}
		}
		n += copy(p[n:], h.block[at-h.off:])
	}
	return n, nil
}

func (h *httpReaderAt) fetch(off int64) error {
	resp, err := Get(h.ctx, h.client, h.url, fmt.Sprintf("bytes=%d-%d", off, off+blockSize-1))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusRequestedRangeNotSatisfiable && off == 0 {
		h.size, h.block, h.off = 0, nil, 0 // an empty file
		return nil
	}
	if resp.StatusCode != http.StatusPartialContent {
		return fmt.Errorf("%s: HTTP %s to a Range request (the server must honour Range for verify to read a remote package)", h.url, resp.Status)
	}
	start, total, err := parseContentRange(resp.Header.Get("Content-Range"))
	if err != nil || start != off {
		return fmt.Errorf("%s: bad Content-Range %q", h.url, resp.Header.Get("Content-Range"))
	}
	h.size = total
	buf, err := io.ReadAll(io.LimitReader(resp.Body, blockSize))
	if se := (*httpc.StallError)(nil); errors.As(err, &se) {
		return err // names the URL
	}
	if err != nil {
		return fmt.Errorf("%s: %w", h.url, err)
	}
	h.off, h.block = off, buf
	return nil
}

// parseContentRange reads "bytes START-END/TOTAL".
func parseContentRange(s string) (start, total int64, err error) {
	s, ok := strings.CutPrefix(s, "bytes ")
	rng, tot, ok2 := strings.Cut(s, "/")
	first, _, ok3 := strings.Cut(rng, "-")
	if !ok || !ok2 || !ok3 {
		return 0, 0, fmt.Errorf("malformed Content-Range")
	}
	if start, err = strconv.ParseInt(first, 10, 64); err != nil {
		return 0, 0, err
	}
	total, err = strconv.ParseInt(tot, 10, 64)
	return start, total, err
}
