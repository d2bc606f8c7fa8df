package pack

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/rsdump/rsdump/internal/sink"
	"github.com/rsdump/rsdump/layout"
	"github.com/rsdump/rsdump/metalink"
	"github.com/rsdump/rsdump/sign"
)

// signingSink is the output of a run that signs (Options.Signer): every
// document it writes gets its armored detached signature beside it,
// NAME.asc, made in the pass that writes the document and written once
// the document is in place. A document without its signature is refused
// by a Destination that requires them, as one with a stale signature is,
// so a crash between the two leaves nothing a Destination takes.
type signingSink struct {
	sink.Sink
	signer *sign.Signer
}

func (s signingSink) WriteFile(ctx context.Context, name string, data []byte) error {
	if err := s.Sink.WriteFile(ctx, name, data); err != nil || !layout.IsDocument(name) {
		return err
	}
	sig, err := s.signer.Sign(bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("%s: %w", s.Loc(name), err)
	}
	return s.Sink.WriteFile(ctx, name+sign.Suffix, sig)
}

func (s signingSink) Create(ctx context.Context, name string) (sink.File, error) {
	f, err := s.Sink.Create(ctx, name)
	if err != nil || !layout.IsDocument(name) {
		return f, err
	}
	w, err := s.signer.NewWriter()
	if err != nil {
		f.Abort()
		return nil, err
	}
	return &signingFile{File: f, sig: w, s: s, ctx: ctx, name: name}, nil
}

// signingFile hashes a document for its signature as it is written. It
// hides the temporary file (no File method), so that every byte passes
// through Write, never copied by the kernel behind the hash's back.
type signingFile struct {
	sink.File
	sig  *sign.Writer
	s    signingSink
	ctx  context.Context
	name string
}

func (f *signingFile) Write(p []byte) (int, error) {
	f.sig.Write(p)
	return f.File.Write(p)
}

func (f *signingFile) Commit() error {
	if err := f.File.Commit(); err != nil {
		return err
	}
	sig, err := f.sig.Signature()
	if err != nil {
		return fmt.Errorf("%s: %w", f.s.Loc(f.name), err)
	}
	return f.s.Sink.WriteFile(f.ctx, f.name+sign.Suffix, sig)
}

// signOutput makes out sign its documents with signer, if any.
func (o *output) signWith(signer *sign.Signer) {
	if signer != nil {
		o.Sink = signingSink{Sink: o.Sink, signer: signer}
		o.signer = signer
	}
}

// packageSignature is the Metalink <signature> of the package pw wrote
// (RFC 5854 4.2.13): made from the package's SHA-256 state, which pack
// computed as it wrote the package, so that signing reads no byte again.
func (w *pkgWriter) packageSignature() (*metalink.Signature, error) {
	if w.out.signer == nil {
		return nil, nil
	}
	sig, err := w.out.signer.SignSHA256(w.tee.whole)
	if errors.Is(err, sign.ErrNotCloneable) {
		return nil, fmt.Errorf("%s: %w: sign with a version 4 OpenPGP key", w.name, err)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", w.name, err)
	}
	return &metalink.Signature{MediaType: sign.MediaType, Value: string(sig)}, nil
}

// signedLeftovers says whether the files a journal recorded beside a
// reused package are signed as this run signs: a detached manifest with
// its signature, a Metalink with a package signature.
func (o *output) signedLeftovers(info PackageInfo) bool {
	if o.signer == nil {
		return true
	}
	if ok, err := o.exists(info.Manifest + sign.Suffix); !ok || err != nil {
		return false
	}
	if info.Metalink == "" {
		return true
	}
	b, err := o.readSmall(info.Metalink, 256<<20)
	return err == nil && bytes.Contains(b, []byte(`mediatype="`+sign.MediaType+`"`))
}
