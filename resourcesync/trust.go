package resourcesync

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/rsdump/rsdump/sign"
)

type trustKey struct{}

// WithTrust returns a context under which every document an Opener opens
// (a ResourceSync document, an index part, a detached manifest; not a
// Metalink, Opener.Unsigned) is read only once its detached signature,
// DOC.asc beside it (sign.Loc), verifies with one of k's keys: the
// document is spooled while its signature is checked and handed to the
// caller only then, so that no byte of a document that fails reaches a
// parser. A missing, malformed, untrusted, SHA-1, expired or bad
// signature fails the open with a *sign.Error naming the document. A
// nil k is ctx as it is.
func WithTrust(ctx context.Context, k *sign.Keyring) context.Context {
	if k == nil {
		return ctx
	}
	return context.WithValue(ctx, trustKey{}, k)
}

// Trust is the keyring ctx requires documents to be signed by, or nil.
func Trust(ctx context.Context) *sign.Keyring {
	k, _ := ctx.Value(trustKey{}).(*sign.Keyring)
	return k
}

// ErrUnauthenticated is something a run under a trust (WithTrust)
// cannot vouch for with a signed document: a package given alone, a
// resource whose signed entry carries no hash.
var ErrUnauthenticated = errors.New("cannot be authenticated")

// RefuseAlone is the refusal, under ctx's trust, of a package given
// without its dump document, which no signed document vouches for; nil
// under no trust. unpack and verify refuse so.
func RefuseAlone(ctx context.Context, pkg string) error {
	k := Trust(ctx)
	if k == nil {
		return nil
	}
	return fmt.Errorf("%s: %w: a package given alone is vouched for by no signed document; give its dump document (signed by %s)", pkg, ErrUnauthenticated, k)
}

// Verify hands back body, the document read from loc, once its
// signature verifies under ctx's trust (WithTrust); without a trust it is
// body itself. It is for a caller that opened loc Unsigned to look at it
// first (discovery, which may meet an HTML page) and now reads it as a
// document. The caller still closes what it opened.
func (o Opener) Verify(ctx context.Context, loc string, body io.Reader) (io.ReadCloser, error) {
	k := Trust(ctx)
	if k == nil {
		return io.NopCloser(body), nil
	}
	return o.authenticate(ctx, k, loc, body)
}

// authenticate fetches the signature of the document at loc, then reads
// the document into a spool through the signature's hash, and returns the
// spool once the signature verified.
func (o Opener) authenticate(ctx context.Context, k *sign.Keyring, loc string, body io.Reader) (io.ReadCloser, error) {
	sig, err := o.signature(ctx, loc)
	if err != nil {
		return nil, err
	}
	sp := &spool{}
	if _, err := k.Verify(io.TeeReader(capReader(body), sp), sig); err != nil {
		sp.Close()
		var se *sign.Error
		if errors.As(err, &se) {
			return nil, se.For(loc)
		}
		return nil, fmt.Errorf("%s: %w", loc, err)
	}
	if sp.err != nil {
		sp.Close()
		return nil, fmt.Errorf("%s: spooling the document: %w", loc, sp.err)
	}
	return sp.reader()
}

// signature reads the detached signature of the document at loc.
func (o Opener) signature(ctx context.Context, loc string) ([]byte, error) {
	so := o
	so.Unsigned, so.Accept, so.MaxBytes = true, sign.MediaType+", */*;q=0.1", sign.MaxSignature
	at := sign.Loc(loc)
	rc, err := so.Open(ctx, at)
	if err != nil {
		return nil, &sign.Error{Doc: loc, Reason: sign.Missing, Msg: "no signature could be read: " + err.Error()}
	}
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, sign.MaxSignature+1))
	if err != nil {
		return nil, &sign.Error{Doc: loc, Reason: sign.Missing, Msg: "its signature could not be read: " + err.Error()}
	}
	return b, nil
}

// spoolMemory is how much of a document a spool holds in memory; the
// rest goes to a temporary file (a document is at most MaxBytes).
const spoolMemory = 1 << 20

// spool holds a document while its signature is checked: in memory, then
// in an unnamed temporary file.
type spool struct {
	mem  bytes.Buffer
	file *os.File
	err  error
}

func (s *spool) Write(p []byte) (int, error) {
	if s.err != nil {
		return len(p), nil // reported after the signature check
	}
	if s.file == nil && s.mem.Len()+len(p) <= spoolMemory {
		return s.mem.Write(p)
	}
	if s.file == nil {
		s.file, s.err = os.CreateTemp("", "rsdump-doc-*")
		if s.err != nil {
			return len(p), nil
		}
		os.Remove(s.file.Name()) // unnamed: gone with its descriptor
		_, s.err = s.file.Write(s.mem.Bytes())
		s.mem = bytes.Buffer{}
	}
	if s.err == nil {
		_, s.err = s.file.Write(p)
	}
	return len(p), nil
}

// reader is the spooled document, from its start.
func (s *spool) reader() (io.ReadCloser, error) {
	if s.file == nil {
		return io.NopCloser(bytes.NewReader(s.mem.Bytes())), nil
	}
	if _, err := s.file.Seek(0, io.SeekStart); err != nil {
		s.Close()
		return nil, err
	}
	return s.file, nil
}

func (s *spool) Close() error {
	if s.file != nil {
		return s.file.Close()
	}
	return nil
}
