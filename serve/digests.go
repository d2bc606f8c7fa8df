package serve

import (
	"context"
	"encoding/hex"
	"io"
	"os"
	"strings"
	"sync"

	"github.com/rsdump/rsdump/internal/digest"
	"github.com/rsdump/rsdump/layout"
	"github.com/rsdump/rsdump/metalink"
	"github.com/rsdump/rsdump/resourcesync"
)

// dumpDocs are the documents whose packages get a Digest header.
var dumpDocs = [...]string{layout.DumpName, layout.ChangeDumpName}

// digests knows each package's SHA-256 and length from the dump documents
// in the directory, else from the package's .meta4: the hash pack computed
// while writing the package, so a request never hashes a file. The
// documents are read again when one of them changes (pack rewrote the
// directory), a .meta4 when it changes; a package whose length is not the
// one given gets no digest rather than a wrong one.
type digests struct {
	dir   *os.Root
	mu    sync.Mutex
	stamp [len(dumpDocs)]docStamp
	sums  map[string]pkgSum
	metas map[string]metaSum // from .meta4 files, for packages no document lists
}

// metaSum is a package's sum as its .meta4 gave it, valid while the
// .meta4 is the one read.
type metaSum struct {
	stamp docStamp
	sum   pkgSum
	ok    bool
}

// docStamp tells one version of a file from another, as pack replaces
// files by renaming new ones over them.
type docStamp struct {
	size, mtime int64
	ok          bool
}

type pkgSum struct {
	length int64
	sha256 [32]byte
}

func newDigests(dir *os.Root) *digests { return &digests{dir: dir} }

// lookup returns the SHA-256 of the package called name whose file has
// size bytes, when a dump document or its .meta4 gives it with that
// length.
func (d *digests) lookup(name string, size int64) ([32]byte, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if now := d.stamps(); d.sums == nil || now != d.stamp {
		d.stamp, d.sums = now, d.load()
	}
	s, ok := d.sums[name]
	if !ok {
		s, ok = d.fromMetalink(name)
	}
	return s.sha256, ok && s.length == size
}

// fromMetalink takes a package's sum from the .meta4 pack wrote beside
// it, read once for each version of that file.
func (d *digests) fromMetalink(name string) (pkgSum, bool) {
	meta := name + ".meta4"
	st := d.stamp1(meta)
	if !st.ok {
		return pkgSum{}, false
	}
	if m, ok := d.metas[meta]; ok && m.stamp == st {
		return m.sum, m.ok
	}
	m := metaSum{stamp: st}
	m.sum, m.ok = d.readMetalink(meta, name)
	if d.metas == nil {
		d.metas = map[string]metaSum{}
	}
	d.metas[meta] = m
	return m.sum, m.ok
}

func (d *digests) readMetalink(meta, name string) (pkgSum, bool) {
	f, _, err := open(d.dir, meta, false, nil)
	if err != nil {
		return pkgSum{}, false
	}
	defer f.Close()
	ml, _, err := metalink.Decode(f)
	if err != nil {
		return pkgSum{}, false
	}
	for _, mf := range ml.Files {
		if mf.Name != name || mf.Size == nil {
			continue
		}
		for _, h := range mf.Hashes {
			var p pkgSum
			if alg, _ := digest.Canonical(h.Type); alg == digest.SHA256 && decodeSum(&p, h.Value) {
				p.length = *mf.Size
				return p, true
			}
		}
	}
	return pkgSum{}, false
}

func decodeSum(p *pkgSum, s string) bool {
	n, err := hex.Decode(p.sha256[:], []byte(strings.ToLower(s)))
	return err == nil && n == len(p.sha256)
}

func (d *digests) stamps() (out [len(dumpDocs)]docStamp) {
	for i, name := range dumpDocs {
		out[i] = d.stamp1(name)
	}
	return out
}

func (d *digests) stamp1(name string) docStamp {
	if fi, err := d.dir.Lstat(name); err == nil && fi.Mode().IsRegular() {
		return docStamp{size: fi.Size(), mtime: fi.ModTime().UnixNano(), ok: true}
	}
	return docStamp{}
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
	if !layout.IsOutput(loc) {
		return nil, os.ErrNotExist
	}
	f, _, err := open(d.dir, loc, false, nil)
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
		var p pkgSum
		if s.Alg == digest.SHA256 && decodeSum(&p, s.Hex) {
			p.length = *u.MD.Length
			sums[resourcesync.BaseName(u.Loc)] = p
		}
	}
}
