// Package s3x builds rsdump's S3 clients (aws-sdk-go-v2) from the standard
// AWS environment and config files plus the s3.Config a context carries,
// and signs the s3:// GET and HEAD requests every rsdump HTTP client
// sends (RoundTripper). It sends nothing through a client of its own: the
// caller hands it internal/httpc's.
package s3x

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	rs3 "github.com/rsdump/rsdump/s3"
)

// DefaultRegion is used when neither the environment nor the config files
// name one: S3-compatible servers mostly ignore it, and AWS answers a
// request to the wrong region with one that names the right one.
const DefaultRegion = "us-east-1"

// Client is an S3 API client and its presigner.
type Client struct {
	API     *s3.Client
	presign *s3.PresignClient
}

// New builds a client from the AWS environment and c; every request it
// sends, credential look-ups included, goes through hc.
func New(ctx context.Context, c rs3.Config, hc *http.Client) (*Client, error) {
	if c.Endpoint != "" {
		if err := rs3.CheckEndpoint(c.Endpoint); err != nil {
			return nil, err
		}
	}
	cfg, err := loadConfig(ctx, hc)
	if err != nil {
		return nil, fmt.Errorf("S3 configuration: %w", err)
	}
	if cfg.Region == "" {
		cfg.Region = DefaultRegion
	}
	api := s3.NewFromConfig(cfg, func(o *s3.Options) {
		if c.Endpoint != "" {
			o.BaseEndpoint = aws.String(c.Endpoint)
		}
		// Any endpoint that is not AWS's own, from c or the environment,
		// is addressed path-style: it needs no wildcard DNS.
		o.UsePathStyle = o.BaseEndpoint != nil
		// Checksums are sent where rsdump computes them (each part's
		// SHA-256), not the SDK's default CRC32 trailers that some
		// S3-compatible servers refuse.
		o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
		o.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
	})
	return &Client{API: api, presign: s3.NewPresignClient(api)}, nil
}

// loadConfig reads the AWS environment and config files, with hc for the
// credential look-ups (instance roles, STS, SSO). A CA bundle
// (AWS_CA_BUNDLE, a profile's ca_bundle) can only be added by the SDK to
// a client of its own building: then the look-ups use that one, and S3
// requests still go through hc, which trusts the system's roots.
func loadConfig(ctx context.Context, hc *http.Client) (aws.Config, error) {
	cfg, err := config.LoadDefaultConfig(ctx, config.WithHTTPClient(hc))
	if err != nil && strings.Contains(err.Error(), "custom RootCAs") {
		cfg, err = config.LoadDefaultConfig(ctx)
	}
	cfg.HTTPClient = hc
	return cfg, err
}

// presignFor is how long a signed GET or HEAD stays valid: each request is
// signed afresh, so only the time to the response headers counts.
const presignFor = 15 * time.Minute

// Presign signs a GET or HEAD of bucket/key.
func (c *Client) Presign(ctx context.Context, method, bucket, key string) (*v4.PresignedHTTPRequest, error) {
	exp := s3.WithPresignExpires(presignFor)
	switch method {
	case http.MethodGet:
		return c.presign.PresignGetObject(ctx, &s3.GetObjectInput{Bucket: &bucket, Key: &key}, exp)
	case http.MethodHead:
		return c.presign.PresignHeadObject(ctx, &s3.HeadObjectInput{Bucket: &bucket, Key: &key}, exp)
	}
	return nil, fmt.Errorf("s3://%s/%s: %s is not supported on an s3:// URL (GET and HEAD are)", bucket, key, method)
}
