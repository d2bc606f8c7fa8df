package pack

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/rsdump/rsdump/internal/httpc"
	"github.com/rsdump/rsdump/internal/sink"
	"github.com/rsdump/rsdump/layout"
	"github.com/rsdump/rsdump/resourcesync"
	"github.com/rsdump/rsdump/s3"
	"github.com/rsdump/rsdump/sign"
)

// output is where a run writes: a directory or an s3://BUCKET/PREFIX,
// through the one sink (internal/sink), and a local directory for the
// scratch files of lists and change walks.
type output struct {
	sink.Sink
	// ctx is the run's context without its cancellation: what was handed
	// to publishing is published even when the run is interrupted. It
	// carries the S3 settings (package s3).
	ctx     context.Context
	scratch string
	dir     string // the output directory; "" for S3
	temp    bool   // scratch is the run's own, removed at the end
	docs    published
	signer  *sign.Signer // signs the documents and packages; nil when the run does not sign
}

// openOutput opens loc, creating a directory if missing.
func openOutput(ctx context.Context, loc string) (*output, error) {
	o := &output{ctx: context.WithoutCancel(ctx)}
	if !s3.IsURL(loc) {
		s, err := sink.OpenDir(loc)
		if err != nil {
			return nil, err
		}
		o.Sink, o.scratch, o.dir = s, loc, loc
		return o, nil
	}
	s, err := sink.OpenBucket(ctx, loc, httpc.Default())
	if err != nil {
		return nil, err
	}
	scratch, err := os.MkdirTemp("", "rsdump-pack-")
	if err != nil {
		return nil, err
	}
	o.Sink, o.scratch, o.temp = s, scratch, true
	return o, nil
}

// openRunOutput opens loc for a run that writes documents: they are
// recorded for the hub and signed as o says.
func openRunOutput(ctx context.Context, loc string, o *Options) (*output, error) {
	out, err := openOutput(ctx, loc)
	if err != nil {
		return nil, err
	}
	out.track(o)
	out.signWith(o.Signer)
	return out, nil
}

// close removes the run's own scratch directory.
func (o *output) close() {
	if o.temp {
		os.RemoveAll(o.scratch)
	}
}

func (o *output) write(name string, data []byte) error { return o.WriteFile(o.ctx, name, data) }

func (o *output) exists(name string) (bool, error) { return sink.Exists(o.ctx, o, name) }

func (o *output) remove(name string) error { return o.Remove(o.ctx, name) }

// load reads a document pack wrote, through the one Loader.
func (o *output) load(l *resourcesync.Loader, name string) error {
	return l.Load(o.ctx, o.Loc(name))
}

// sameFile reports whether name holds length bytes with sha-256 sum. A
// local file is read and hashed; an object's length is compared, since
// an object exists only once its upload completed (the journal records
// a package after that), and reading it back would download it.
func (o *output) sameFile(name string, length int64, sum string) bool {
	if o.dir == "" {
		fi, err := o.Stat(o.ctx, name)
		return err == nil && fi.Size == length
	}
	n, got, err := hashFile(filepath.Join(o.dir, filepath.FromSlash(name)))
	return err == nil && n == length && got == sum
}

func hashFile(path string) (int64, string, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, "", err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	return n, hex.EncodeToString(h.Sum(nil)), err
}

// readSmall reads a small file pack wrote; a missing one is nil, nil.
func (o *output) readSmall(name string, max int64) ([]byte, error) {
	b, err := sink.ReadFile(o.ctx, o, name, max)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return b, err
}

// discardPending aborts the uploads (or removes the temporary files) that
// runs left unfinished under the names owns accepts: another shard's are
// left to it.
func (o *output) discardPending(owns func(string) bool) error {
	ps, err := o.Pending(o.ctx)
	if err != nil {
		return err
	}
	for _, p := range ps {
		if !owns(p.Name) {
			continue
		}
		if err := o.Discard(o.ctx, p); err != nil {
			return err
		}
	}
	return nil
}

// ownsPending says whether an unfinished file left in the output is this
// run's to discard: one of the names it writes, and for a shard only its
// own, since other shards may be writing to the same prefix.
func (r *run) ownsPending(name string) bool {
	base := filepath.Base(name)
	if r.kind.shard != "" {
		return strings.HasPrefix(base, r.kind.prefix+"-")
	}
	return layout.IsOutput(name) && !strings.Contains(base, "-shard") || base == StateName
}

// noBaseline is the error of a --changes run into an output with no
// earlier pack: what to do about it.
func (o *output) noBaseline(err error) error {
	return &BaselineError{Path: o.Loc(StateName), Err: &noEarlierPack{out: o.Loc(""), err: err}}
}

// noEarlierPack is a --changes run with nothing to find changes since.
type noEarlierPack struct {
	out string
	err error
}

func (e *noEarlierPack) Error() string {
	return fmt.Sprintf("no earlier pack in %s to find the changes since: run rsdump pack SRC -o %s first, or give --since RESOURCEDUMP, CHANGEDUMP, RESOURCELIST or STATE", e.out, e.out)
}
func (e *noEarlierPack) Unwrap() error { return e.err }

// stateBaseline is the baseline a --changes run reads when --since is not
// given: the state file in the output, with its delta beside it. An
// object is first copied into the scratch directory, with its delta,
// since a state baseline is read from a local file, and its key (for the
// journal) is its URL, length and time, not the copy's.
func (o *output) stateBaseline(since string) (path, key string, err error) {
	if since != "" {
		return since, "", nil
	}
	fi, err := o.Stat(o.ctx, StateName)
	if errors.Is(err, fs.ErrNotExist) {
		return "", "", o.noBaseline(err)
	}
	if o.dir != "" {
		return filepath.Join(o.dir, StateName), "", err
	}
	if err != nil {
		return "", "", err
	}
	path = filepath.Join(o.scratch, StateName)
	for _, name := range []string{StateName, StateName + deltaSuffix} {
		if err := o.copyOut(name, filepath.Join(o.scratch, name)); err != nil && (name == StateName || !errors.Is(err, fs.ErrNotExist)) {
			return "", "", err
		}
	}
	return path, fmt.Sprintf("%s|%d|%d", o.Loc(StateName), fi.Size, fi.ModTime.UnixNano()), nil
}

// copyOut copies the output's file name to the local file path.
func (o *output) copyOut(name, path string) error {
	rc, err := o.Open(o.ctx, name)
	if err != nil {
		return err
	}
	defer rc.Close()
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	_, err = io.Copy(f, rc)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
