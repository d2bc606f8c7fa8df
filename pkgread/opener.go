package pkgread

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/rsdump/rsdump/resourcesync"
)

// ErrPackageHash is a package whose bytes do not hash to what its dump
// document says: an Opener that checks the hash as it fetches returns an
// error for which errors.Is(err, ErrPackageHash) holds.
var ErrPackageHash = errors.New("package hash mismatch")

// Opener opens the packages a run reads. Local opens local files only; a
// caller that reads remote dumps brings one that fetches them (package
// transfer/pkgfetch's Remote, from every mirror), so that a reader such
// as verify needs no download code of its own.
type Opener interface {
	// Open returns the package ref with its size, whether its bytes were
	// checked against every hash the dump document gives (so that reading
	// need not hash them again), and a function that closes it.
	Open(ctx context.Context, ref PackageRef) (ra io.ReaderAt, size int64, checked bool, closeFn func() error, err error)
	// Copies lists where a document that ref's entry links to (href: its
	// detached manifest, its Metalink) may be read, href first.
	Copies(ctx context.Context, ref PackageRef, href string) ([]string, error)
}

// Local is the Opener of local packages: a package named by a URL is an
// error naming it.
type Local struct{}

// Open opens a local package where it is.
func (Local) Open(_ context.Context, ref PackageRef) (io.ReaderAt, int64, bool, func() error, error) {
	if resourcesync.IsURL(ref.Loc) {
		return nil, 0, false, nil, fmt.Errorf("%s: a remote package, and this reader opens local packages only (give it an Opener that fetches, such as pkgfetch.Remote)", ref.Loc)
	}
	ra, size, closeFn, err := OpenLocation(ref.Loc)
	return ra, size, false, closeFn, err
}

// Copies is href alone.
func (Local) Copies(_ context.Context, _ PackageRef, href string) ([]string, error) {
	return []string{href}, nil
}
