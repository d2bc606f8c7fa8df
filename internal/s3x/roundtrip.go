package s3x

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"sync"
	"time"

	rs3 "github.com/rsdump/rsdump/s3"
)

// RoundTripper serves s3://BUCKET/KEY requests: it signs each GET or HEAD
// for the s3.Config of the request's context and sends it through base,
// so that an s3:// URL goes wherever an http one does (documents, Range
// requests, probes) with the same timeouts and stall watch. Registered
// with http.Transport.RegisterProtocol, it is the one place s3:// reads
// are turned into HTTP, and so the one place the user's credentials are
// used for a read: only under a context that grants S3 (s3.Grant), so
// that a URL a remote document slipped past a caller is never signed.
type RoundTripper struct {
	base http.RoundTripper // sends the signed request
	hc   *http.Client      // for credential look-ups

	mu      sync.Mutex
	clients map[rs3.Config]*Client
}

// NewRoundTripper returns a RoundTripper sending through base, and hc for
// the SDK's own requests (instance roles, STS, SSO).
func NewRoundTripper(base http.RoundTripper, hc *http.Client) *RoundTripper {
	return &RoundTripper{base: base, hc: hc, clients: map[rs3.Config]*Client{}}
}

func (t *RoundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		req.Body.Close()
	}
	ctx := req.Context()
	if !rs3.Granted(ctx) {
		return nil, fmt.Errorf("%s: not signed: %w", req.URL.Redacted(), rs3.ErrNotGranted)
	}
	bucket, key, err := rs3.Split(req.URL.String())
	if err != nil {
		return nil, err
	}
	c, err := t.client(ctx)
	if err != nil {
		return nil, err
	}
	signed, err := c.Presign(ctx, req.Method, bucket, key)
	if err != nil {
		return nil, err
	}
	out, err := http.NewRequestWithContext(ctx, signed.Method, signed.URL, nil)
	if err != nil {
		return nil, err
	}
	for k, v := range req.Header {
		out.Header[k] = v
	}
	for k, v := range signed.SignedHeader {
		if k != "Host" {
			out.Header[k] = v
		}
	}
	resp, err := t.base.RoundTrip(out)
	if err != nil {
		return nil, err
	}
	resp.Request = req // errors and redirects name the s3:// URL, never the signature
	if resp.StatusCode >= 300 && req.Method != http.MethodHead {
		explain(resp)
	}
	return resp, nil
}

func (t *RoundTripper) client(ctx context.Context) (*Client, error) {
	cfg := rs3.ConfigFrom(ctx)
	t.mu.Lock()
	defer t.mu.Unlock()
	if c, ok := t.clients[cfg]; ok {
		return c, nil
	}
	c, err := New(ctx, cfg, t.hc)
	if err != nil {
		return nil, err
	}
	t.clients[cfg] = c
	return c, nil
}

const explainWait = 10 * time.Second

var (
	errCode = regexp.MustCompile(`<Code>([^<]{1,100})</Code>`)
	errMsg  = regexp.MustCompile(`<Message>([^<]{1,300})</Message>`)
)

// explain adds the S3 error code and message of an error response to its
// status line ("403 Forbidden (SignatureDoesNotMatch: ...)"), which every
// caller's status error shows; the body is left readable.
func explain(resp *http.Response) {
	// Bounded in time too: the stall watch starts only once the caller
	// reads the body.
	stop := time.AfterFunc(explainWait, func() { resp.Body.Close() })
	head, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	if !stop.Stop() {
		return // closed: the caller's read fails
	}
	resp.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(head), resp.Body), resp.Body}
	code := errCode.FindSubmatch(head)
	if code == nil {
		return
	}
	what := string(code[1])
	if m := errMsg.FindSubmatch(head); m != nil {
		what += ": " + string(m[1])
	}
	resp.Status = fmt.Sprintf("%s (%s)", resp.Status, what)
}
