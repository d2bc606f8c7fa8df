// Package sink is the one output of pack: a directory or an S3 prefix,
// behind the few operations pack needs of either. A file is written under
// a temporary name (disk: internal/atomic) or as a multipart upload (S3:
// parts streamed one by one, each with its SHA-256 sent to the server)
// and appears under its final name only on Commit; Abort leaves the final
// name as it was. Small files (manifests, documents) are written
// whole, read back, listed and removed; a log (the journal) is appended
// to, at a cost that does not grow with its length.
//
// Names are slash-separated, relative to the sink, and checked by
// internal/safepath.
package sink

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"time"

	"github.com/rsdump/rsdump/internal/safepath"
	"github.com/rsdump/rsdump/s3"
)

// Sink is where pack writes.
type Sink interface {
	// Loc is where name is: a path, or an s3:// URL.
	Loc(name string) string
	// Create starts writing name; nothing is under name before Commit.
	Create(ctx context.Context, name string) (File, error)
	// Resume goes on with the file an earlier Create (or Resume) started,
	// whose ID was id: the caller writes every byte again, and what is
	// already stored and the same (each S3 part's SHA-256) is not sent
	// again. When id is no longer usable it starts afresh, as Create.
	Resume(ctx context.Context, name, id string) (File, error)
	// WriteFile writes name whole, atomically.
	WriteFile(ctx context.Context, name string, data []byte) error
	// WriteNew writes name whole, atomically, only when nothing is stored
	// under it: an error wrapping fs.ErrExist when something is. Of
	// writers racing for one name exactly one wins (a hard link on disk,
	// a conditional PUT with If-None-Match: * on S3, where the server
	// honours it: see internal/claim's Probe).
	WriteNew(ctx context.Context, name string, data []byte) error
	// Append adds data at the end of name, durably, creating it if
	// missing; Open reads back all that was appended. It is for logs such
	// as the journal, whose cost must not grow with their length: a crash
	// loses at most the data of the call under way. One writer a name.
	Append(ctx context.Context, name string, data []byte) error
	// Open reads name; a missing one is fs.ErrNotExist.
	Open(ctx context.Context, name string) (io.ReadCloser, error)
	// Stat describes name; a missing one is fs.ErrNotExist.
	Stat(ctx context.Context, name string) (Info, error)
	// List calls fn for every file whose name starts with prefix, in
	// name order, temporary files and unfinished uploads left out.
	List(ctx context.Context, prefix string, fn func(Info) error) error
	// Remove deletes name; a missing one is not an error.
	Remove(ctx context.Context, name string) error
	// Pending lists what killed runs left unfinished: temporary files, or
	// multipart uploads.
	Pending(ctx context.Context) ([]Pending, error)
	// Discard drops one of them.
	Discard(ctx context.Context, p Pending) error
}

// File is a file being written.
type File interface {
	io.Writer
	// ID names the unfinished file for Resume: an S3 upload ID, or "" on
	// disk, where nothing is resumed (rewriting costs what checking
	// would).
	ID() string
	// Commit publishes the file under its name, or fails leaving the name
	// as it was.
	Commit() error
	// Abort drops what was written; the final name is not touched. It
	// does nothing after Commit or a first Abort, so it can be deferred.
	Abort()
}

// Info describes a stored file.
type Info struct {
	Name    string
	Size    int64
	ModTime time.Time
}

// Pending is an unfinished file: its name and what to discard.
type Pending struct {
	Name string
	ID   string // a temporary path, or an upload ID
}

// Open returns the sink at loc: an s3://BUCKET/PREFIX URL, sent through
// hc (internal/httpc's client), or a directory, created if missing.
func Open(ctx context.Context, loc string, hc *http.Client) (Sink, error) {
	if s3.IsURL(loc) {
		return OpenBucket(ctx, loc, hc)
	}
	return OpenDir(loc)
}

// ReadFile reads name whole, refusing more than max bytes.
func ReadFile(ctx context.Context, s Sink, name string, max int64) ([]byte, error) {
	rc, err := s.Open(ctx, name)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, max+1))
	if err == nil && int64(len(b)) > max {
		err = fmt.Errorf("%s: larger than %d bytes", s.Loc(name), max)
	}
	return b, err
}

// Exists reports whether name is stored.
func Exists(ctx context.Context, s Sink, name string) (bool, error) {
	_, err := s.Stat(ctx, name)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}

func checkName(name string) error {
	if err := safepath.Check(name); err != nil {
		return fmt.Errorf("%q: %w", name, err)
	}
	return nil
}
