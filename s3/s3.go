// Package s3 names objects in S3-compatible storage (AWS, Ceph RGW, MinIO,
// VersityGW) as s3://BUCKET/KEY, and carries the one setting rsdump adds
// to the standard AWS environment and config files: the endpoint of a
// server that is not AWS.
//
// Credentials, region and profile come from where every AWS tool takes
// them (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN,
// AWS_REGION, AWS_PROFILE, ~/.aws/config and ~/.aws/credentials, web
// identity tokens, instance roles). An endpoint comes from Config.Endpoint,
// else AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL or the profile's
// endpoint_url; any endpoint set so is addressed path-style
// (ENDPOINT/BUCKET/KEY), which every S3-compatible server serves without
// wildcard DNS.
//
// Every rsdump HTTP client reads s3:// URLs (GET and HEAD, signed), so
// whatever takes a document or package URL takes an s3:// one; the
// settings travel in the context. So does the grant: the credentials are
// the user's, and a request is signed only under a context that Grant
// made from an s3:// location the user gave, never because a document
// fetched from elsewhere names an object.
package s3

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// Scheme is the URL scheme of an object: s3://BUCKET/KEY.
const Scheme = "s3"

// Config is what rsdump adds to the AWS environment.
type Config struct {
	// Endpoint is an S3-compatible server's base URL
	// (http://127.0.0.1:7070), addressed path-style. Empty takes the
	// environment's, else AWS's.
	Endpoint string
}

type ctxKey struct{}

// WithConfig returns a context whose S3 requests use c.
func WithConfig(ctx context.Context, c Config) context.Context {
	return context.WithValue(ctx, ctxKey{}, c)
}

// ConfigFrom returns the Config ctx carries, or the zero Config.
func ConfigFrom(ctx context.Context) Config {
	c, _ := ctx.Value(ctxKey{}).(Config)
	return c
}

type grantKey struct{}

// ErrNotGranted is an s3:// location to be read under a context that does
// not grant S3.
var ErrNotGranted = errors.New("S3 is read only when the user gives an s3:// source or base URL")

// Grant returns ctx granting S3 when one of given, the locations the user
// gave (a source, a base URL, an output), is an s3:// URL; else ctx.
func Grant(ctx context.Context, given ...string) context.Context {
	for _, g := range given {
		if IsURL(g) {
			return context.WithValue(ctx, grantKey{}, true)
		}
	}
	return ctx
}

// Granted reports whether ctx grants S3: only then are s3:// requests
// signed, and s3:// references in a document read over HTTP followed.
func Granted(ctx context.Context) bool {
	g, _ := ctx.Value(grantKey{}).(bool)
	return g
}

// CheckEndpoint refuses an endpoint that is not an absolute http(s) URL
// without a path, query or credentials.
func CheckEndpoint(e string) error {
	u, err := url.Parse(e)
	switch {
	case err != nil:
		return fmt.Errorf("S3 endpoint %q: %w", e, err)
	case u.Scheme != "http" && u.Scheme != "https", u.Host == "":
		return fmt.Errorf("S3 endpoint %q is not an absolute http(s) URL", e)
	case u.User != nil, u.RawQuery != "", strings.Trim(u.Path, "/") != "":
		return fmt.Errorf("S3 endpoint %q: only scheme, host and port are allowed", e)
	}
	return nil
}

// IsURL reports whether s is meant to name an object or prefix,
// s3://BUCKET[/KEY]: it starts with the scheme s3, in any case, and a
// colon (resourcesync.IsURL's rule). Split refuses one that does not
// name a bucket.
func IsURL(s string) bool {
	scheme, _, ok := strings.Cut(s, ":")
	return ok && strings.EqualFold(scheme, Scheme)
}

// ErrBadURL is an s3:// URL without a valid bucket.
var ErrBadURL = errors.New("not an s3://BUCKET/KEY URL")

// Split returns the bucket and key (without a leading slash) of an
// s3:// URL. The key may be empty (a bucket) or end in "/" (a prefix).
// An s3:// URL is a URL: a key's spaces, "%", "?" and "#" are
// percent-encoded in it, and decoded here. A key with a "." or ".."
// segment is refused: servers and proxies disagree on whether it names
// another key.
func Split(s string) (bucket, key string, err error) {
	u, err := url.Parse(s)
	if err != nil || u.Scheme != Scheme || u.User != nil || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" {
		return "", "", fmt.Errorf("%q: %w", s, ErrBadURL)
	}
	if !validBucket(u.Host) {
		return "", "", fmt.Errorf("%q: bucket %q: %w", s, u.Host, ErrBadURL)
	}
	key = strings.TrimPrefix(u.Path, "/")
	for seg := range strings.SplitSeq(key, "/") {
		if seg == "." || seg == ".." {
			return "", "", fmt.Errorf("%q: the key has a %q segment: %w", s, seg, ErrBadURL)
		}
	}
	return u.Host, key, nil
}

// Join is the URL of key in bucket, the key percent-encoded where a URL
// needs it.
func Join(bucket, key string) string {
	return (&url.URL{Scheme: Scheme, Host: bucket, Path: "/" + key}).String()
}

// validBucket applies the bucket naming rules every S3 server shares:
// 3 to 63 characters of lower-case letters, digits, dots and hyphens,
// starting and ending with a letter or digit.
func validBucket(b string) bool {
	if len(b) < 3 || len(b) > 63 {
		return false
	}
	for i := 0; i < len(b); i++ {
		c := b[i]
		alnum := c >= 'a' && c <= 'z' || c >= '0' && c <= '9'
		if !alnum && (c != '.' && c != '-' || i == 0 || i == len(b)-1) {
			return false
		}
	}
	return true
}
