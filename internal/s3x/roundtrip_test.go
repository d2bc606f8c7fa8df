package s3x

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	rs3 "github.com/rsdump/rsdump/s3"
)

// testEnv gives the SDK credentials and nothing of the machine's AWS
// setup.
func testEnv(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", "k")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "s")
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_CONFIG_FILE", t.TempDir()+"/none")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", t.TempDir()+"/none")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
}

// Nothing is signed or sent under a context that does not grant S3, nor
// for a key with a "." or ".." segment: the error names the URL.
func TestRoundTripRefuses(t *testing.T) {
	testEnv(t)
	var sent atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { sent.Add(1) }))
	defer srv.Close()
	rt := NewRoundTripper(http.DefaultTransport, srv.Client())
	ctx := rs3.WithConfig(context.Background(), rs3.Config{Endpoint: srv.URL})
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "s3://bucket/key", nil)
	if _, err := rt.RoundTrip(req); !errors.Is(err, rs3.ErrNotGranted) || !strings.Contains(err.Error(), "s3://bucket/key") {
		t.Errorf("without a grant: %v", err)
	}
	req, _ = http.NewRequestWithContext(rs3.Grant(ctx, "s3://bucket/"), http.MethodGet, "s3://bucket/a/../key", nil)
	if _, err := rt.RoundTrip(req); !errors.Is(err, rs3.ErrBadURL) || !strings.Contains(err.Error(), "s3://bucket/a/../key") {
		t.Errorf("a key with a .. segment: %v", err)
	}
	if n := sent.Load(); n != 0 {
		t.Errorf("%d requests sent", n)
	}
}

// The round tripper signs a GET of s3://BUCKET/KEY for the endpoint of the
// request's context, path-style, keeps the caller's headers (Range), names
// the s3:// URL in the response, and puts the S3 error code in the status.
func TestRoundTripSignsAndExplains(t *testing.T) {
	testEnv(t)
	var seen *http.Request
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = r
		if r.URL.Path == "/bucket/missing.xml" {
			w.WriteHeader(http.StatusNotFound)
			io.WriteString(w, `<?xml version="1.0"?><Error><Code>NoSuchKey</Code><Message>The specified key does not exist.</Message></Error>`)
			return
		}
		io.WriteString(w, "data")
	}))
	defer srv.Close()
	rt := NewRoundTripper(http.DefaultTransport, srv.Client())
	ctx := rs3.Grant(rs3.WithConfig(context.Background(), rs3.Config{Endpoint: srv.URL}), "s3://bucket/")

	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "s3://bucket/dir/a%20b.zip", nil)
	req.Header.Set("Range", "bytes=0-3")
	resp, err := rt.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if seen.URL.Path != "/bucket/dir/a b.zip" || seen.URL.RawPath != "" && seen.URL.RawPath != "/bucket/dir/a%20b.zip" || seen.URL.Query().Get("X-Amz-Signature") == "" || seen.Header.Get("Range") != "bytes=0-3" {
		t.Fatalf("sent %s %v", seen.URL, seen.Header)
	}
	if resp.Request != req {
		t.Fatal("the response names the signed request, not the s3:// one")
	}

	req, _ = http.NewRequestWithContext(ctx, http.MethodGet, "s3://bucket/missing.xml", nil)
	resp, err = rt.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(resp.Status, "404") || !strings.Contains(resp.Status, "NoSuchKey: The specified key does not exist.") || !strings.Contains(string(body), "<Code>NoSuchKey</Code>") {
		t.Fatalf("status %q, body %q", resp.Status, body)
	}

	req, _ = http.NewRequestWithContext(ctx, http.MethodPut, "s3://bucket/x", nil)
	if _, err := rt.RoundTrip(req); err == nil || !strings.Contains(err.Error(), "PUT is not supported") {
		t.Fatalf("PUT: %v", err)
	}
	req, _ = http.NewRequestWithContext(ctx, http.MethodGet, "s3://BAD/x", nil)
	if _, err := rt.RoundTrip(req); err == nil {
		t.Fatal("a bad bucket name: no error")
	}
}
