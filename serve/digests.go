package serve

import (
	"context"
	"encoding/hex"
	"io"
	"os"
	"sync"
	"time"

	"github.com/rsdump/rsdump/pack"
	"github.com/rsdump/rsdump/resourcesync"
)

// dumpDocs are the documents whose packages get a Digest header.
var dumpDocs = [...]string{pack.DumpName, "changedump.xml"}

// digests knows each package's SHA-256 and length from the dump documents
// in the directory: the hash pack computed while writing the package, so a
// request never hashes a file. The documents are read again when one of
// them changes (pack rewrote the directory); a package whose length is not
// the document's gets no digest rather than a wrong one.
type digests struct {
	dir   *os.Root
	mu    sync.Mutex
	stamp [len(dumpDocs)]docStamp
	sums  map[string]pkgSum
}

type docStamp struct {
	size  int64
	mtime time.Time
	ok    bool
}

type pkgSum struct {
	length int64
	sha256 [32]byte
}

func newDigests(dir *os.Root) *digests { return &digests{dir: dir} }

// lookup returns the SHA-256 of the package called name whose file has
// size bytes, when a dump document lists it with that length.
func (d *digests) lookup(name string, size int64) ([32]byte, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if now := d.stamps(); d.sums == nil || now != d.stamp {
		d.stamp, d.sums = now, d.load()
	}
	s, ok := d.sums[name]
	return s.sha256, ok && s.length == size
}

func (d *digests) stamps() (out [len(dumpDocs)]docStamp) {
	for i, name := range dumpDocs {
		if fi, err := d.dir.Lstat(name); err == nil && fi.Mode().IsRegular() {
			out[i] = docStamp{size: fi.Size(), mtime: fi.ModTime(), ok: true}
		}
	}
	return out
}

// load reads every dump document and the parts of an index. A document
// that cannot be read gives no digests; its packages are still served.
func (d *digests) load() map[string]pkgSum {
	sums := map[string]pkgSum{}
	l := resourcesync.Loader{
		Open: d.open,
		Entry: func(doc *resourcesync.Document, _ int, u resourcesync.URL) error {
			if doc.Header.Kind == resourcesync.URLSet && resourcesync.IsDump(doc.Header) {
				addSum(sums, u)
			}
			return nil
		},
		PartFailed: func(*resourcesync.Document, int, resourcesync.URL, error) error { return nil },
	}
	for _, name := range dumpDocs {
		_ = l.Load(context.Background(), name) // partial results stand
	}
	return sums
}

// open opens a document of the directory; only pack's outputs.
func (d *digests) open(_ context.Context, loc string) (io.ReadCloser, error) {
	if !pack.IsOutput(loc) {
		return nil, os.ErrNotExist
	}
	f, _, err := open(d.dir, loc, false)
	return f, err
}

func addSum(sums map[string]pkgSum, u resourcesync.URL) {
	if u.MD == nil || u.MD.Length == nil {
		return
	}
	hs, err := resourcesync.ParseHash(u.MD.Hash)
	if err != nil {
		return
	}
	for _, s := range hs {
		if s.Alg != "sha-256" {
			continue
		}
		var p pkgSum
		if n, err := hex.Decode(p.sha256[:], []byte(s.Hex)); err == nil && n == 32 {
			p.length = *u.MD.Length
			sums[resourcesync.BaseName(u.Loc)] = p
		}
	}
}
