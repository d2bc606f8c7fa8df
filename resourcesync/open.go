package resourcesync

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"

	"github.com/rsdump/rsdump/internal/httpc"
)

// An Opener is the one way rsdump opens a document (a ResourceSync
// document, a detached manifest, a Metalink): a local file, or a URL
// (IsURL: http, https, or s3://BUCKET/KEY, which rsdump's HTTP client
// signs only under the user's grant, s3.Grant) fetched through Client.
// A fetch that fails for a reason that passes (a connection reset, a 5xx,
// a 429 or 503, after the wait its Retry-After asks for) is tried again,
// and a body cut while it is read is resumed where it broke when the
// server named its version, a bounded number of times within a bounded
// time (internal/httpc's DoRetry; the bounds are the client's); a 404 or
// another 4xx is not.
// Errors name the document, and, once it was asked for more than once,
// the number of attempts. A document larger than MaxBytes fails, a file
// as it is opened, a URL by its Content-Length or as its body is read; a
// body is held to the client's stall timeout and minimum speed. The zero
// Opener reads documents of the sitemap limit through httpc.Default().
// Under a context that requires signatures (WithTrust), a document is
// handed over only once its detached signature verified.
type Opener struct {
	Client   *http.Client // nil: httpc.Default()
	Accept   string       // the Accept field of a URL's request; "" sends none
	MaxBytes int64        // larger fails; 0: MaxBytes, the sitemap limit
	// Unsigned reads the document without its signature even under
	// WithTrust: a Metalink, whose mirrors and piece hashes are hints and
	// never decide what lands (the signed dump document's hash does), or
	// a first look at what may be an HTML page (Verify then checks the
	// document it turns out to be).
	Unsigned bool
}

// Open opens the document at loc through the zero Opener: an OpenFunc.
func Open(ctx context.Context, loc string) (io.ReadCloser, error) {
	return Opener{}.Open(ctx, loc)
}

// Open opens the document at loc. It is an OpenFunc.
func (o Opener) Open(ctx context.Context, loc string) (io.ReadCloser, error) {
	rc, _, err := o.OpenHeader(ctx, loc)
	return rc, err
}

// OpenHeader is Open that also returns the response's header fields
// (Content-Type, Link), empty for a file.
func (o Opener) OpenHeader(ctx context.Context, loc string) (io.ReadCloser, http.Header, error) {
	max := o.MaxBytes
	if max <= 0 {
		max = MaxBytes
	}
	if !IsURL(loc) {
		rc, err := openFile(loc, max)
		if err != nil {
			return nil, nil, err
		}
		rc, err = o.check(ctx, loc, rc)
		return rc, http.Header{}, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, loc, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", loc, err)
	}
	if o.Accept != "" {
		req.Header.Set("Accept", o.Accept)
	}
	resp, rc, err := httpc.DoRetry(o.Client, req, max)
	if err != nil {
		return nil, nil, err
	}
	rc, err = o.check(ctx, loc, rc)
	if err != nil {
		return nil, nil, err
	}
	return rc, resp.Header, nil
}

// check is the document rc, opened from loc, once its signature verified
// when ctx requires one (WithTrust). rc is closed when it is not handed
// back.
func (o Opener) check(ctx context.Context, loc string, rc io.ReadCloser) (io.ReadCloser, error) {
	k := Trust(ctx)
	if k == nil || o.Unsigned {
		return rc, nil
	}
	defer rc.Close()
	return o.authenticate(ctx, k, loc, rc)
}

// openFile opens a regular file of at most max bytes.
func openFile(path string, max int64) (io.ReadCloser, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	switch {
	case err != nil:
	case !fi.Mode().IsRegular():
		err = fmt.Errorf("%s: not a regular file", path)
	case fi.Size() > max:
		err = fmt.Errorf("%s: %d bytes: %w of %d bytes", path, fi.Size(), httpc.ErrTooLarge, max)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}
