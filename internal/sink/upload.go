package sink

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// upload is a file streamed into a multipart upload: each part, once
// full, goes to a worker that hashes it and sends it with its SHA-256
// (x-amz-checksum-sha256, checked by the server, and the signature's
// payload hash); Commit completes the upload, which is when the object
// appears.
type upload struct {
	b        *Bucket
	ctx      context.Context
	cancel   context.CancelCauseFunc
	name, id string

	part  int32  // the part being filled, from 1
	off   int64  // its offset in the object
	buf   []byte // its bytes
	free  chan []byte
	jobs  chan partJob
	wg    sync.WaitGroup
	prior map[int32]types.Part // parts a resumed upload holds already

	mu    sync.Mutex
	done  []types.CompletedPart
	err   error
	ended bool
}

type partJob struct {
	n   int32
	off int64
	b   []byte
}

// Create starts a multipart upload of name with SHA-256 part checksums.
func (b *Bucket) Create(ctx context.Context, name string) (File, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	out, err := b.api.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{
		Bucket: &b.bucket, Key: ptr(b.key(name)), ChecksumAlgorithm: types.ChecksumAlgorithmSha256})
	if err != nil {
		return nil, fmt.Errorf("%s: starting upload: %w", b.Loc(name), explain(err))
	}
	return b.start(ctx, name, deref(out.UploadId), nil), nil
}

// Resume goes on with upload id: the parts it holds are listed, and a
// part written again is sent only if its SHA-256 (or, from a server that
// keeps none, its MD5 ETag) differs from the stored one's.
func (b *Bucket) Resume(ctx context.Context, name, id string) (File, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	prior, err := b.listParts(ctx, name, id)
	if errors.Is(err, fs.ErrNotExist) || id == "" {
		return b.Create(ctx, name)
	}
	if err != nil {
		return nil, err
	}
	return b.start(ctx, name, id, prior), nil
}

func (b *Bucket) listParts(ctx context.Context, name, id string) (map[int32]types.Part, error) {
	prior := map[int32]types.Part{}
	in := &s3.ListPartsInput{Bucket: &b.bucket, Key: ptr(b.key(name)), UploadId: &id}
	for {
		out, err := b.api.ListParts(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("%s: listing the parts of upload %s: %w", b.Loc(name), id, explain(err))
		}
		for _, p := range out.Parts {
			prior[deref(p.PartNumber)] = p
		}
		if !deref(out.IsTruncated) || len(out.Parts) == 0 {
			return prior, nil
		}
		in.PartNumberMarker = out.NextPartNumberMarker
	}
}

func (b *Bucket) start(ctx context.Context, name, id string, prior map[int32]types.Part) *upload {
	ctx, cancel := context.WithCancelCause(ctx)
	w := max(b.Workers, 1)
	u := &upload{b: b, ctx: ctx, cancel: cancel, name: name, id: id, part: 1, prior: prior,
		free: make(chan []byte, w+1), jobs: make(chan partJob)}
	for range w + 1 {
		u.free <- nil // buffers are made on first use, at their part's size
	}
	u.buf = u.take()
	for range w {
		u.wg.Add(1)
		go u.worker()
	}
	return u
}

func (u *upload) ID() string { return u.id }

// Truncate cuts the object back to n bytes, which must lie in the part
// not yet handed to a worker: what was sent cannot be taken back.
func (u *upload) Truncate(n int64) error {
	if n < u.off || n > u.off+int64(len(u.buf)) {
		return fmt.Errorf("%s: cannot cut back to byte %d: parts up to byte %d were sent already", u.b.Loc(u.name), n, u.off)
	}
	u.buf = u.buf[:n-u.off]
	return nil
}

func (u *upload) Write(p []byte) (int, error) {
	n := 0
	for len(p) > 0 {
		if err := u.failed(); err != nil {
			return n, err
		}
		room := int(u.b.partSize(u.part)) - len(u.buf)
		k := min(room, len(p))
		u.buf = append(u.buf, p[:k]...)
		n, p = n+k, p[k:]
		if k == room {
			if err := u.send(); err != nil {
				return n, err
			}
		}
	}
	return n, nil
}

// take waits for a free buffer, and gives it the size of the part being
// filled.
func (u *upload) take() []byte {
	select {
	case b := <-u.free:
		if size := u.b.partSize(u.part); int64(cap(b)) < size {
			b = make([]byte, 0, size)
		}
		return b[:0]
	case <-u.ctx.Done():
		return nil
	}
}

// send hands the full part to a worker and starts the next one.
func (u *upload) send() error {
	if u.part > maxParts {
		return fmt.Errorf("%s: more than %d parts", u.b.Loc(u.name), maxParts)
	}
	j := partJob{n: u.part, off: u.off, b: u.buf}
	select {
	case u.jobs <- j:
	case <-u.ctx.Done():
		return u.failed()
	}
	u.part++
	u.off += int64(len(j.b))
	u.buf = u.take()
	return u.failed()
}

func (u *upload) worker() {
	defer u.wg.Done()
	for j := range u.jobs {
		if u.failed() == nil {
			if err := u.sendPart(j); err != nil {
				u.fail(err)
			}
		}
		u.free <- j.b
	}
}

// sendPart uploads one part, or reuses the stored one when it has the
// same bytes.
func (u *upload) sendPart(j partJob) error {
	sum := sha256.Sum256(j.b)
	b64 := base64.StdEncoding.EncodeToString(sum[:])
	cp := types.CompletedPart{PartNumber: ptr(j.n), ChecksumSHA256: &b64}
	if p, ok := u.prior[j.n]; ok && samePart(p, j.b, b64) {
		cp.ETag = p.ETag
		u.record(cp)
		return nil
	}
	b := u.b
	out, err := b.api.UploadPart(u.ctx, &s3.UploadPartInput{
		Bucket: &b.bucket, Key: ptr(b.key(u.name)), UploadId: &u.id, PartNumber: ptr(j.n),
		Body: bytes.NewReader(j.b), ContentLength: ptr(int64(len(j.b))), ChecksumSHA256: &b64,
	}, payloadHash(sum[:]))
	if err != nil {
		if c := context.Cause(u.ctx); c != nil && u.ctx.Err() != nil {
			err = c
		}
		return &PartError{Loc: b.Loc(u.name), Part: int(j.n), Off: j.off, Len: int64(len(j.b)), Err: explain(err)}
	}
	cp.ETag = out.ETag
	u.record(cp)
	return nil
}

// samePart says whether a stored part holds b: by its SHA-256 checksum,
// or its ETag when that is the MD5 of the part (servers that keep no
// checksum for a part).
func samePart(p types.Part, b []byte, b64 string) bool {
	if deref(p.Size) != int64(len(b)) {
		return false
	}
	if c := deref(p.ChecksumSHA256); c != "" {
		return c == b64
	}
	sum := md5.Sum(b)
	return strings.Trim(deref(p.ETag), `"`) == hex.EncodeToString(sum[:])
}

// PartError is a part the server did not take.
type PartError struct {
	Loc      string
	Part     int
	Off, Len int64
	Err      error
}

func (e *PartError) Error() string {
	return fmt.Sprintf("%s: part %d (bytes %d-%d): %v", e.Loc, e.Part, e.Off, e.Off+e.Len-1, e.Err)
}
func (e *PartError) Unwrap() error { return e.Err }

func (u *upload) record(cp types.CompletedPart) {
	u.mu.Lock()
	u.done = append(u.done, cp)
	u.mu.Unlock()
}

func (u *upload) fail(err error) {
	u.mu.Lock()
	if u.err == nil {
		u.err = err
	}
	u.mu.Unlock()
	u.cancel(err)
}

func (u *upload) failed() error {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.err == nil && u.ctx.Err() != nil {
		u.err = context.Cause(u.ctx)
	}
	return u.err
}

// Commit sends the last part, waits for every part and completes the
// upload: only then is the object there.
func (u *upload) Commit() error {
	if u.ended {
		return fmt.Errorf("%s: already committed or aborted", u.b.Loc(u.name))
	}
	if len(u.buf) > 0 || u.part == 1 {
		if err := u.send(); err != nil {
			u.Abort()
			return err
		}
	}
	u.ended = true
	close(u.jobs)
	u.wg.Wait()
	if err := u.failed(); err != nil {
		u.abortUpload()
		return err
	}
	slices.SortFunc(u.done, func(a, b types.CompletedPart) int { return int(*a.PartNumber - *b.PartNumber) })
	b := u.b
	_, err := b.api.CompleteMultipartUpload(u.ctx, &s3.CompleteMultipartUploadInput{
		Bucket: &b.bucket, Key: ptr(b.key(u.name)), UploadId: &u.id,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: u.done}})
	u.cancel(nil)
	if err != nil {
		return fmt.Errorf("%s: completing upload %s: %w", b.Loc(u.name), u.id, explain(err))
	}
	return nil
}

// Abort stops the workers and aborts the upload: the parts sent are
// dropped and no object appears.
func (u *upload) Abort() {
	if u.ended {
		return
	}
	u.ended = true
	u.fail(errAborted)
	close(u.jobs)
	u.wg.Wait()
	u.abortUpload()
}

var errAborted = errors.New("upload aborted")

// abortWait bounds the request that aborts an upload, which runs even
// when the upload's context was cancelled.
const abortWait = 30 * time.Second

func (u *upload) abortUpload() {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(u.ctx), abortWait)
	defer cancel()
	u.b.Discard(ctx, Pending{Name: u.name, ID: u.id})
}
