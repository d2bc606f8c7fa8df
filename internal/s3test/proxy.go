package s3test

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"sync/atomic"
	"testing"
)

// Proxy sits in front of the server on loopback: it counts the requests
// and the upload parts sent through it, the parts whose
// x-amz-checksum-sha256 is missing or wrong, and flips one byte in the
// body of part Corrupt (0: none), so that the server refuses it.
type Proxy struct {
	URL      string // the endpoint to give clients instead of the server's
	Requests atomic.Int32
	Parts    atomic.Int32
	BadSums  atomic.Int32
	Corrupt  atomic.Int32
	// IgnoreConditions makes the server look like one that does not
	// honour If-None-Match on PUT: a 412 Precondition Failed is answered
	// 200 OK (the header is signed, so it cannot be taken off the
	// request; the object is left as it was, as a client of such a server
	// cannot tell either).
	IgnoreConditions atomic.Bool
}

// NewProxy starts a proxy to s, closed when the test ends.
func (s *Server) NewProxy(t testing.TB) *Proxy {
	p := &Proxy{}
	target, _ := url.Parse(s.Endpoint)
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.ModifyResponse = func(resp *http.Response) error {
		if p.IgnoreConditions.Load() && resp.Request.Method == http.MethodPut && resp.StatusCode == http.StatusPreconditionFailed {
			resp.Body.Close()
			resp.StatusCode, resp.Status = http.StatusOK, "200 OK"
			resp.Body, resp.ContentLength = http.NoBody, 0
			resp.Header.Set("Content-Length", "0")
			resp.Header.Set("ETag", `"ignored"`)
		}
		return nil
	}
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.Requests.Add(1)
		if n := r.URL.Query().Get("partNumber"); n != "" && r.Method == http.MethodPut {
			p.part(r, n)
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	p.URL = hs.URL
	return p
}

func (p *Proxy) part(r *http.Request, n string) {
	p.Parts.Add(1)
	body, _ := io.ReadAll(r.Body)
	sum := sha256.Sum256(body)
	if r.Header.Get("x-amz-checksum-sha256") != base64.StdEncoding.EncodeToString(sum[:]) {
		p.BadSums.Add(1)
	}
	if c := p.Corrupt.Load(); c > 0 && n == strconv.Itoa(int(c)) && len(body) > 0 {
		body[len(body)/2] ^= 0x20
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
}
