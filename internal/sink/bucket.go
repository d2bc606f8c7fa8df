package sink

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"strings"
	"time"

	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/rsdump/rsdump/internal/pause"
	"github.com/rsdump/rsdump/internal/s3x"
	rs3 "github.com/rsdump/rsdump/s3"
)

// Bucket is a sink under a prefix of an S3 bucket.
type Bucket struct {
	api    *s3.Client
	bucket string
	prefix string // "" or ending in "/"

	// PartSize is the size of an upload's first 1,000 parts; each next
	// thousand doubles it, so that 10,000 parts reach far past any
	// package while memory stays at Workers+1 parts per upload. [8 MiB]
	PartSize int64
	// Workers is how many parts of one upload are sent at once. [2]
	Workers int

	segs segments // appended names (appendlog.go)
}

// Defaults.
const (
	DefaultPartSize = 8 << 20
	DefaultWorkers  = 2
	minPartSize     = 5 << 20 // S3's minimum for every part but the last
	maxParts        = 10000
)

// OpenBucket returns the sink at loc, s3://BUCKET[/PREFIX], with the S3
// settings of ctx (package s3), sending through hc. It checks that the
// bucket answers.
func OpenBucket(ctx context.Context, loc string, hc *http.Client) (*Bucket, error) {
	bucket, key, err := rs3.Split(loc)
	if err != nil {
		return nil, err
	}
	c, err := s3x.New(ctx, rs3.ConfigFrom(ctx), hc)
	if err != nil {
		return nil, err
	}
	b := &Bucket{api: c.API, bucket: bucket, PartSize: DefaultPartSize, Workers: DefaultWorkers}
	if p := strings.Trim(key, "/"); p != "" {
		b.prefix = p + "/"
	}
	if _, err := b.api.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: &bucket}); err != nil {
		return nil, fmt.Errorf("s3://%s: %w", bucket, explain(err))
	}
	return b, nil
}

func (b *Bucket) key(name string) string { return b.prefix + name }

func (b *Bucket) Loc(name string) string { return rs3.Join(b.bucket, b.key(name)) }

func (b *Bucket) WriteFile(ctx context.Context, name string, data []byte) error {
	if err := checkName(name); err != nil {
		return err
	}
	sum := sha256.Sum256(data)
	in := &s3.PutObjectInput{Bucket: &b.bucket, Key: ptr(b.key(name)), Body: bytes.NewReader(data),
		ContentLength: ptr(int64(len(data))), ChecksumSHA256: ptr(base64.StdEncoding.EncodeToString(sum[:]))}
	if _, err := b.api.PutObject(ctx, in, payloadHash(sum[:])); err != nil {
		return fmt.Errorf("%s: %w", b.Loc(name), explain(err))
	}
	return nil
}

// WriteNew writes name with a conditional PUT, If-None-Match: *: the
// server refuses it (412 Precondition Failed) when the key exists. A 409
// ConditionalRequestConflict, AWS's answer to a conditional write racing
// another on the key, is tried again: the next answer says who won.
func (b *Bucket) WriteNew(ctx context.Context, name string, data []byte) error {
	if err := checkName(name); err != nil {
		return err
	}
	sum := sha256.Sum256(data)
	for try := 0; ; try++ {
		in := &s3.PutObjectInput{Bucket: &b.bucket, Key: ptr(b.key(name)), Body: bytes.NewReader(data), IfNoneMatch: ptr("*"),
			ContentLength: ptr(int64(len(data))), ChecksumSHA256: ptr(base64.StdEncoding.EncodeToString(sum[:]))}
		_, err := b.api.PutObject(ctx, in, payloadHash(sum[:]))
		switch status := httpStatus(err); {
		case err == nil:
			return nil
		case status == http.StatusPreconditionFailed:
			return fmt.Errorf("%s: %w", b.Loc(name), fs.ErrExist)
		case status == http.StatusConflict && try < 5:
			if err := pause.For(ctx, time.Duration(50<<try)*time.Millisecond); err != nil {
				return err
			}
		default:
			return fmt.Errorf("%s: %w", b.Loc(name), explain(err))
		}
	}
}

func httpStatus(err error) int {
	var re *smithyhttp.ResponseError
	if errors.As(err, &re) {
		return re.HTTPStatusCode()
	}
	return 0
}

// Open reads name: an object, or the segments of an appended name.
func (b *Bucket) Open(ctx context.Context, name string) (io.ReadCloser, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	rc, err := b.openObject(ctx, name)
	if errors.Is(err, fs.ErrNotExist) {
		if segs, serr := b.openSegments(ctx, name); !errors.Is(serr, fs.ErrNotExist) {
			return segs, serr
		}
	}
	return rc, err
}

func (b *Bucket) openObject(ctx context.Context, name string) (io.ReadCloser, error) {
	out, err := b.api.GetObject(ctx, &s3.GetObjectInput{Bucket: &b.bucket, Key: ptr(b.key(name))})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", b.Loc(name), explain(err))
	}
	return out.Body, nil
}

func (b *Bucket) Stat(ctx context.Context, name string) (Info, error) {
	if err := checkName(name); err != nil {
		return Info{}, err
	}
	out, err := b.api.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &b.bucket, Key: ptr(b.key(name))})
	if err != nil {
		return Info{}, fmt.Errorf("%s: %w", b.Loc(name), explain(err))
	}
	return Info{Name: name, Size: deref(out.ContentLength), ModTime: deref(out.LastModified)}, nil
}

func (b *Bucket) List(ctx context.Context, prefix string, fn func(Info) error) error {
	p := s3.NewListObjectsV2Paginator(b.api, &s3.ListObjectsV2Input{Bucket: &b.bucket, Prefix: ptr(b.prefix + prefix)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("%s: %w", b.Loc(prefix), explain(err))
		}
		for _, o := range page.Contents {
			in := Info{Name: strings.TrimPrefix(deref(o.Key), b.prefix), Size: deref(o.Size), ModTime: deref(o.LastModified)}
			if err := fn(in); err != nil {
				return err
			}
		}
	}
	return nil
}

// Remove deletes name, and the segments of an appended name.
func (b *Bucket) Remove(ctx context.Context, name string) error {
	if err := checkName(name); err != nil {
		return err
	}
	return errors.Join(b.removeObject(ctx, name), b.removeSegments(ctx, name))
}

func (b *Bucket) removeObject(ctx context.Context, name string) error {
	if _, err := b.api.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &b.bucket, Key: ptr(b.key(name))}); err != nil {
		if errors.Is(explain(err), fs.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("%s: %w", b.Loc(name), explain(err))
	}
	return nil
}

// Pending lists the multipart uploads under the prefix.
func (b *Bucket) Pending(ctx context.Context) ([]Pending, error) {
	var ps []Pending
	in := &s3.ListMultipartUploadsInput{Bucket: &b.bucket, Prefix: &b.prefix}
	for {
		out, err := b.api.ListMultipartUploads(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("%s: listing uploads: %w", b.Loc(""), explain(err))
		}
		for _, u := range out.Uploads {
			ps = append(ps, Pending{Name: strings.TrimPrefix(deref(u.Key), b.prefix), ID: deref(u.UploadId)})
		}
		if !deref(out.IsTruncated) || len(out.Uploads) == 0 {
			return ps, nil
		}
		in.KeyMarker, in.UploadIdMarker = out.NextKeyMarker, out.NextUploadIdMarker
	}
}

// Discard aborts an upload.
func (b *Bucket) Discard(ctx context.Context, p Pending) error {
	_, err := b.api.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: &b.bucket, Key: ptr(b.key(p.Name)), UploadId: &p.ID})
	if err != nil && !errors.Is(explain(err), fs.ErrNotExist) {
		return fmt.Errorf("%s: aborting upload %s: %w", b.Loc(p.Name), p.ID, explain(err))
	}
	return nil
}

// partSize is the size of part n (from 1): PartSize for the first 1,000,
// doubling every thousand after. It depends on n alone, so that a resumed
// upload cuts the same parts.
func (b *Bucket) partSize(n int32) int64 {
	base := max(b.PartSize, minPartSize)
	return base << ((n - 1) / 1000)
}

// payloadHash signs a request's body with the SHA-256 rsdump computed
// already, so that the SDK does not read it again to sign it.
func payloadHash(sum []byte) func(*s3.Options) {
	h := hex.EncodeToString(sum)
	return func(o *s3.Options) {
		o.APIOptions = append(o.APIOptions, func(st *middleware.Stack) error {
			return st.Initialize.Add(middleware.InitializeMiddlewareFunc("rsdumpPayloadHash",
				func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
					return next.HandleInitialize(v4.SetPayloadHash(ctx, h), in)
				}), middleware.Before)
		})
	}
}

// explain turns the SDK's error into one that says what the server said
// ("NoSuchKey: ..."), wrapping fs.ErrNotExist for a missing key, bucket
// or upload.
func explain(err error) error {
	var re *smithyhttp.ResponseError
	var ae smithy.APIError
	status := 0
	if errors.As(err, &re) {
		status = re.HTTPStatusCode()
	}
	switch {
	case errors.As(err, &ae) && (ae.ErrorCode() == "NoSuchKey" || ae.ErrorCode() == "NoSuchUpload" || ae.ErrorCode() == "NotFound"):
		return &notFound{fmt.Errorf("%s: %s (HTTP %d)", ae.ErrorCode(), ae.ErrorMessage(), status)}
	case errors.As(err, &ae):
		return fmt.Errorf("%s: %s (HTTP %d)", ae.ErrorCode(), ae.ErrorMessage(), status)
	case status == http.StatusNotFound:
		return &notFound{err}
	}
	return err
}

type notFound struct{ err error }

func (e *notFound) Error() string   { return e.err.Error() }
func (e *notFound) Unwrap() []error { return []error{e.err, fs.ErrNotExist} }

func ptr[T any](v T) *T { return &v }

func deref[T any](p *T) (v T) {
	if p != nil {
		v = *p
	}
	return v
}
