package httpc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"
)

// Open GETs a document and returns its body, which fails with an error
// wrapping ErrTooLarge past maxBytes (no cap when maxBytes <= 0), and with
// a *SpeedError below the client's Options.MinSpeed. A status other than
// 2xx is a *StatusError. c nil is Default().
func Open(ctx context.Context, c *http.Client, url string, maxBytes int64) (io.ReadCloser, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", url, err)
	}
	return Do(c, req, maxBytes)
}

// Do is Open for a request the caller built, to set headers (Accept, say).
func Do(c *http.Client, req *http.Request, maxBytes int64) (io.ReadCloser, error) {
	_, rc, err := DoResponse(c, req, maxBytes)
	return rc, err
}

// DoResponse is Do that also returns the response, whose headers (Link,
// Content-Type) and final URL a caller may need; its body is the capped
// reader returned, which the caller closes.
func DoResponse(c *http.Client, req *http.Request, maxBytes int64) (*http.Response, io.ReadCloser, error) {
	if c == nil {
		c = Default()
	}
	req = req.WithContext(context.WithValue(req.Context(), judgedKey{}, true))
	resp, err := c.Do(req)
	if err != nil {
		return nil, nil, err // *url.Error names the URL
	}
	return checkResponse(req.URL.Redacted(), req, resp, maxBytes)
}

// checkResponse is DoResponse's verdict on the response to req, whose
// URL renders as u (req.URL.Redacted()): a *StatusError but for a 2xx,
// ErrTooLarge for a Content-Length past maxBytes, else the body capped.
func checkResponse(u string, req *http.Request, resp *http.Response, maxBytes int64) (*http.Response, io.ReadCloser, error) {
	final := ""
	if resp.Request == req {
		final = u // not redirected (a pipelined response): one URL to render
	} else {
		final = resp.Request.URL.Redacted()
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		io.CopyN(io.Discard, resp.Body, 4<<10) // so the connection can be reused
		resp.Body.Close()
		se := &StatusError{URL: u, Final: final, Code: resp.StatusCode, Status: resp.Status}
		if se.Code == http.StatusTooManyRequests || se.Code == http.StatusServiceUnavailable {
			se.RetryAfter = ParseRetryAfter(resp.Header.Get("Retry-After"), time.Now())
		}
		return nil, nil, se
	}
	if final != u {
		u += " (redirected to " + final + ")"
	}
	if maxBytes <= 0 {
		maxBytes = -1
	}
	if maxBytes > 0 && resp.ContentLength > maxBytes {
		resp.Body.Close()
		return nil, nil, tooLarge(u, maxBytes)
	}
	return resp, &capped{rc: resp.Body, url: u, max: maxBytes, left: maxBytes}, nil
}

func tooLarge(url string, max int64) error {
	return fmt.Errorf("%s: %w of %d bytes", url, ErrTooLarge, max)
}

// capped reads at most max bytes and fails on the next one; its errors
// name the URL.
type capped struct {
	rc        io.ReadCloser
	url       string
	max, left int64 // max < 0: no cap
}

func (c *capped) Read(p []byte) (int, error) {
	if c.max >= 0 && c.left < 0 {
		return 0, tooLarge(c.url, c.max)
	}
	if c.max >= 0 && int64(len(p)) > c.left+1 {
		p = p[:c.left+1]
	}
	n, err := c.rc.Read(p)
	if c.max >= 0 {
		c.left -= int64(n)
		if c.left < 0 {
			return n + int(c.left), tooLarge(c.url, c.max)
		}
	}
	if err != nil && err != io.EOF && !namesURL(err) {
		err = fmt.Errorf("%s: %w", c.url, err)
	}
	return n, err
}

// namesURL says whether err is one of the watch's, which name the URL.
func namesURL(err error) bool {
	var stall *StallError
	var slow *SpeedError
	return errors.As(err, &stall) || errors.As(err, &slow)
}

func (c *capped) Close() error { return c.rc.Close() }
