// Package pkgfetch fetches remote packages for reading: Remote opens a
// package where it is when it is local, and otherwise downloads it first,
// through the transfer engine, from every mirror its dump document names,
// into a temporary directory, so that what pkgread then reads and checks
// is one stable local copy; Ranges reads a remote package by byte ranges
// instead (transfer.Ranges), for one bitstream. verify and unpack open
// every package through it.
package pkgfetch

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"sync"

	"github.com/rsdump/rsdump/internal/digest"
	"github.com/rsdump/rsdump/pkgread"
	"github.com/rsdump/rsdump/resourcesync"
	"github.com/rsdump/rsdump/transfer"
)

// Remote is the pkgread.Opener of remote packages: it opens packages, fetching a remote one first through one transfer
// engine, shared by every download of a run and so one connection budget,
// from every mirror its document names, into a directory of its own under
// TempDir that closing it removes. What is then read and checked is one
// stable local copy. The zero Remote uses the transfer defaults and the
// system's temporary directory.
type Remote struct {
	Transfer transfer.Options // its Client defaults to Client
	Client   *http.Client
	TempDir  string
	// Resume keeps each package's download in a directory named after
	// its URL under TempDir (which must be set) when it fails or is
	// cancelled, so that a later run continues it through the engine's
	// resume state; it is removed once the package has been used.
	Resume bool

	once sync.Once
	g    *transfer.Getter
}

// Open opens the package ref, local where it is, remote once downloaded,
// and returns it with its size, whether the download checked every hash
// the document gives (so that reading need not hash it again), and a
// function that closes it.
func (r *Remote) Open(ctx context.Context, ref pkgread.PackageRef) (ra io.ReaderAt, size int64, checked bool, closeFn func() error, err error) {
	if !resourcesync.IsURL(ref.Loc) {
		ra, size, closeFn, err = pkgread.OpenLocation(ref.Loc)
		return ra, size, false, closeFn, err
	}
	dir, err := r.downloadDir(ref.Loc)
	if err != nil {
		return nil, 0, false, nil, err
	}
	drop := func() error { return os.RemoveAll(dir) }
	d, err := Download(ctx, r.getter(), ref, dir)
	if err == nil {
		var closeFile func() error
		if ra, size, closeFile, err = pkgread.OpenLocation(d.Path); err == nil {
			return ra, size, d.Checked, func() error { closeFile(); return drop() }, nil
		}
	}
	if !r.Resume {
		drop()
	}
	if errors.Is(err, transfer.ErrFileHash) {
		err = packageHashError{err}
	}
	return nil, 0, false, nil, err
}

// packageHashError is the engine's whole-file hash mismatch, told to
// pkgread's readers as pkgread.ErrPackageHash.
type packageHashError struct{ err error }

func (e packageHashError) Error() string   { return e.err.Error() }
func (e packageHashError) Unwrap() []error { return []error{e.err, pkgread.ErrPackageHash} }

// Copies lists where a document that ref's entry links to may be read:
// at href, and beside each of the package's other mirrors when href sits
// beside its first (transfer.LinkCopies).
func (r *Remote) Copies(ctx context.Context, ref pkgread.PackageRef, href string) ([]string, error) {
	if ref.Doc == "" || !resourcesync.IsURL(href) {
		return []string{href}, nil
	}
	return transfer.LinkCopies(ctx, ref.Doc, ref.Entry, href)
}

// Opened is a package open for reading (Stream).
type Opened struct {
	io.ReaderAt
	Size int64
	// Checked says, as Open's checked does, that the engine checks every
	// hash the document gives for the package: once Wait returned nil.
	Checked bool
	// Dir is the directory the package's download keeps its resume
	// record in, when it is kept across runs (Resume): a reader may keep
	// its own there, which goes with it once the package was used.
	Dir string
	// Held says the package is held in memory as it downloads: the
	// reader must Release what it is done with (see Release).
	Held    bool
	release func(off int64)
	wait    func() error
	close   func() error
}

// Release tells the download the reader needs no byte before off any
// more: a remote package is held in memory (transfer.Getter.StreamHeld),
// and fetched no further than a window ahead of what the reader has not
// released. A local package ignores it.
func (o *Opened) Release(off int64) {
	if o.release != nil {
		o.release(off)
	}
}

// Wait returns once every byte of the package has been fetched and
// checked: nil when its length and hash matched. A local package has
// nothing to wait for.
func (o *Opened) Wait() error {
	if o.wait == nil {
		return nil
	}
	return o.wait()
}

// Close closes the package, stopping its download if it still runs.
func (o *Opened) Close() error { return o.close() }

// Stream opens the package ref for reading while it downloads: a local
// package where it is, a remote one through the transfer engine as Open
// fetches it, but readable as soon as its pieces are verified
// (transfer.Streaming): a reader that goes front to back, as pkgread
// does, stages bitstreams while the rest of the package arrives, and
// reads no byte the engine has not checked against its piece hash. Wait
// says whether the whole package then matched its length and hash. A
// package with piece hashes is held in memory, never written to the disk
// (transfer.Getter.StreamHeld; the reader Releases what it is done with);
// its resume record is the engine's checkpoint in Dir (with Resume a
// killed run goes on from it, for the bytes the reader did not keep).
// Without piece hashes it is downloaded into Dir, its .part the resume
// record. Closing removes Dir once the download completed, or whatever
// the outcome without Resume.
//
// Stream returns once the package's last piece (where its central
// directory ends) is verified, or the download failed: a package that
// cannot be fetched fails here, as with Open.
func (r *Remote) Stream(ctx context.Context, ref pkgread.PackageRef) (*Opened, error) {
	if !resourcesync.IsURL(ref.Loc) {
		ra, size, closeFn, err := pkgread.OpenLocation(ref.Loc)
		if err != nil {
			return nil, err
		}
		return &Opened{ReaderAt: ra, Size: size, close: closeFn}, nil
	}
	dir, err := r.downloadDir(ref.Loc)
	if err != nil {
		return nil, err
	}
	g := r.getter()
	f, err := remoteFile(ctx, g, ref)
	if err != nil {
		if !r.Resume {
			os.RemoveAll(dir)
		}
		return nil, err
	}
	checked := checkedAll(f, ref.Want)
	s, err := streamTail(ctx, g, dir, f, checked)
	closeFn := func() error {
		s.Close()
		if _, err := s.Wait(); err != nil && r.Resume {
			return nil // kept for the next run to resume
		}
		return os.RemoveAll(dir)
	}
	if err != nil {
		closeFn()
		return nil, err
	}
	wait := func() error { _, err := s.Wait(); return err }
	bufLen := pkgread.ReadAheadSize // a .part: large reads of the file
	if s.Held() {
		bufLen = heldReadAhead
	}
	return &Opened{ReaderAt: pkgread.ReadAhead(s, f.Size, bufLen), Size: f.Size, Checked: checked, Dir: dir, Held: s.Held(),
		release: s.Release, wait: wait, close: closeFn}, nil
}

// heldReadAhead is the read-ahead buffer of a held package: what goes
// through it is the headers and data descriptors of its entries, and
// entries of under 4 KiB; a larger entry's bytes are read out of the held
// pieces straight into the reader's, where with a buffer of a MiB
// (a file's) every byte was copied twice.
const heldReadAhead = 16 << 10

// streamTail starts f's download, held in memory when hold, and waits
// for its last byte (pkgread starts with the central directory). A
// package whose mirrors all answer range requests with the whole file
// cannot be held (its one response would not wait for the reader): it is
// downloaded into dir instead, as a file without piece hashes is. Nor is
// one whose document gives hashes the engine does not check (hold
// false): the reader then hashes the whole package itself, to its end,
// after the bitstreams, and must find every byte still there.
func streamTail(ctx context.Context, g *transfer.Getter, dir string, f transfer.File, hold bool) (*transfer.Streaming, error) {
	if !hold {
		s := g.Stream(ctx, dir, f, f.Size-1)
		return s, awaitTail(s, f.Size)
	}
	s := g.StreamHeld(ctx, dir, f, f.Size-1)
	err := awaitTail(s, f.Size)
	var me *transfer.MirrorsError
	if errors.As(err, &me) && me.NoRange() && ctx.Err() == nil {
		s = g.Stream(ctx, dir, f, f.Size-1)
		err = awaitTail(s, f.Size)
	}
	return s, err
}

// awaitTail waits for s's last byte, or its end when it is empty; on
// failure s is closed and the error is the download's own, which names
// the mirrors and why.
func awaitTail(s *transfer.Streaming, size int64) error {
	var tail [1]byte
	var err error
	if size == 0 {
		_, err = s.Wait()
	} else {
		_, err = s.ReadAt(tail[:], size-1)
	}
	if err != nil {
		s.Close()
		if _, werr := s.Wait(); werr != nil {
			err = werr
		}
	}
	return err
}

// Ranges opens the remote package ref for reading by byte ranges from its
// <loc>, mirrors and Metalink (transfer.Ranges), without downloading it:
// for its central directory and manifest, or one bitstream.
func (r *Remote) Ranges(ctx context.Context, ref pkgread.PackageRef) (*transfer.Ranges, error) {
	g := r.getter()
	f, err := remoteFile(ctx, g, ref)
	if err != nil {
		return nil, err
	}
	if f.Size < 0 && ref.Length >= 0 {
		f.Size = ref.Length
	}
	return g.Ranges(ctx, f)
}

// downloadDir makes the directory a package downloads into: a fresh one,
// or with Resume the one its URL names, which an earlier run may have
// left half full.
func (r *Remote) downloadDir(loc string) (string, error) {
	if !r.Resume {
		return os.MkdirTemp(r.TempDir, "rsdump-")
	}
	sum := sha256.Sum256([]byte(loc))
	dir := filepath.Join(r.TempDir, "pkg-"+hex.EncodeToString(sum[:8]))
	return dir, os.MkdirAll(dir, 0o755)
}

func (r *Remote) getter() *transfer.Getter {
	r.once.Do(func() {
		o := r.Transfer
		if o.Client == nil {
			o.Client = r.Client
		}
		// A package is a working copy, hashed again whenever it is
		// resumed or found complete, and removed once used: syncing it
		// to disk would buy nothing but writes of data about to go.
		o.Scratch = true
		r.g = transfer.New(o)
	})
	return r.g
}

// Downloaded is a remote package fetched into a local directory.
type Downloaded struct {
	Path string
	Size int64
	// Checked says that the engine, checking the file's hash, checked
	// every hash the dump document gives for the package: reading it need
	// not hash it again.
	Checked bool
}

// Download fetches the remote package ref through the transfer engine g
// into dir: from its <loc>, every rel="duplicate" mirror and its linked
// Metalink, or, for a package given without a dump document, from what
// its server says (RFC 6249). The engine checks every piece it has a hash
// for, and publishes the file only when its length and strongest hash
// match. Everything verify and unpack then read is this local copy, so
// the bytes checked are the bytes used.
func Download(ctx context.Context, g *transfer.Getter, ref pkgread.PackageRef, dir string) (*Downloaded, error) {
	f, err := remoteFile(ctx, g, ref)
	if err != nil {
		return nil, err
	}
	res, err := g.Get(ctx, dir, []transfer.File{f})
	if err != nil {
		return nil, err
	}
	return &Downloaded{Path: filepath.Join(dir, filepath.FromSlash(f.Name)), Size: res[0].Size, Checked: checkedAll(f, ref.Want)}, nil
}

// remoteFile describes a remote package to the transfer engine: from its
// dump document's entry, or for a package given on its own from what its
// server says, with what the caller knows of its length and hash.
func remoteFile(ctx context.Context, g *transfer.Getter, ref pkgread.PackageRef) (transfer.File, error) {
	if ref.Doc != "" {
		return g.FileFromEntry(ctx, ref.Doc, ref.Entry)
	}
	if len(ref.Want) > 0 && len(ref.Want.Known()) == 0 {
		// Only hashes rsdump cannot compute: the engine refuses the file
		// before any request, the probe of its server included.
		return transfer.File{Name: path.Base(ref.Loc), Size: ref.Length, Unverifiable: ref.Want.Algs()}, nil
	}
	fs, err := g.Resolve(ctx, ref.Loc)
	if err != nil {
		return transfer.File{}, err
	}
	f := fs[0]
	if s, ok := ref.Want.Strongest(); ok {
		// What the caller knows (the dump's hash) outranks what the
		// server says of its own bytes in a Digest header.
		f.HashAlg, f.Hash = s.Alg, s.Hex
	}
	if ref.Length >= 0 && f.Size < 0 {
		f.Size = ref.Length
	}
	return f, nil
}

// checkedAll reports whether the engine, by checking f's hash, checked
// every hash the dump document gives for the package.
func checkedAll(f transfer.File, want digest.Set) bool {
	known := want.Known()
	return f.HashAlg != "" && (len(known) == 0 || len(known) == 1 && known[0] == f.HashAlg)
}
