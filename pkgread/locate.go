package pkgread

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"

	"github.com/rsdump/rsdump/internal/httpc"
	"github.com/rsdump/rsdump/resourcesync"
)

// ReadDocument reads a whole document, local or remote, of at most
// resourcesync.MaxBytes: documents and detached manifests are bounded by the
// sitemap limits, and a larger one is refused rather than buffered.
func ReadDocument(ctx context.Context, client *http.Client, loc string) ([]byte, error) {
	rc, err := resourcesync.Opener{Client: client}.Open(ctx, loc)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	var buf bytes.Buffer
	if f, ok := rc.(*os.File); ok {
		if fi, err := f.Stat(); err == nil {
			buf.Grow(int(min(fi.Size(), resourcesync.MaxBytes) + 1)) // one allocation
		}
	}
	n, err := io.Copy(&buf, io.LimitReader(rc, resourcesync.MaxBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", loc, err)
	}
	if n > resourcesync.MaxBytes {
		return nil, fmt.Errorf("%s: larger than the sitemap limit of %d bytes", loc, resourcesync.MaxBytes)
	}
	return buf.Bytes(), nil
}

// Get sends a GET request for loc, with a Range header when rng is set.
// A nil client is rsdump's (internal/httpc): timeouts, a stall watch on
// the body, a User-Agent.
func Get(ctx context.Context, client *http.Client, loc, rng string) (*http.Response, error) {
	if client == nil {
		client = httpc.Default()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, loc, nil)
	if err != nil {
		return nil, err
	}
	if rng != "" {
		req.Header.Set("Range", rng)
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err // *url.Error names the URL
	}
	return resp, nil
}
