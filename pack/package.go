package pack

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/rsdump/rsdump/internal/atomic"
	"github.com/rsdump/rsdump/internal/digest"
	"github.com/rsdump/rsdump/internal/sink"
	"github.com/rsdump/rsdump/internal/zipw"
	"github.com/rsdump/rsdump/resourcesync"
)

// pkgWriter writes one package to a temporary file in the output
// directory; commit gives it its final name.
type pkgWriter struct {
	opts    *Options
	name    string
	at      time.Time
	out     *output
	af      sink.File // the package under its temporary name, or its upload
	tee     *tee
	zw      *zipw.Writer
	entries []resourcesync.URL
	bytes   int64
	mh      *digest.Multi // for streamed files

	kind        *dumpKind
	from, until time.Time       // a Change Dump package's interval
	names       map[string]bool // entry names taken, in a Change Dump package
}

func newPkgWriter(o *Options, dir, name string, at time.Time) (*pkgWriter, error) {
	return newKindWriter(o, dir, &planned{name: name}, resourceDump, at)
}

// newKindWriter starts a package in the directory dir (tests).
func newKindWriter(o *Options, dir string, pl *planned, kind *dumpKind, at time.Time) (*pkgWriter, error) {
	out, err := openOutput(context.Background(), dir)
	if err != nil {
		return nil, err
	}
	return newOutWriter(o, out, nil, pl, kind, at)
}

// newOutWriter starts a package in out: a temporary file, or an upload,
// which resumes the one the journal j recorded for the same plan and is
// recorded there before any part is sent.
func newOutWriter(o *Options, out *output, j *journal, pl *planned, kind *dumpKind, at time.Time) (*pkgWriter, error) {
	name := pl.name
	mh, err := digest.NewMulti(o.Hashes...)
	if err != nil {
		return nil, err
	}
	var af sink.File
	if id := j.upload(*pl); id != "" {
		af, err = out.Resume(out.ctx, name, id)
	} else {
		af, err = out.Create(out.ctx, name)
	}
	if err != nil {
		return nil, err
	}
	if err := j.recordUpload(name, pl.plan, af.ID()); err != nil {
		af.Abort()
		return nil, err
	}
	t := newTee(af, pieceLength(o))
	w := &pkgWriter{opts: o, out: out, name: name, at: at, af: af, tee: t, zw: zipw.NewWriter(t, o.Level), mh: mh, kind: kind}
	if kind.changes() {
		w.from, w.until, w.names = pl.from, pl.until, map[string]bool{}
	}
	return w, nil
}

// entryName is the name of the item's bitstream in the ZIP; its manifest path
// is the same with a leading slash. In a Change Dump package two changes
// to one file need two names: the second gets a suffix, ~2, ~3..., that
// no other entry of the package has taken.
func (w *pkgWriter) entryName(it item) string {
	name := w.kind.dir + "/" + it.rel
	if w.names == nil {
		return name
	}
	return uniqueName(w.names, name)
}

func uniqueName(taken map[string]bool, name string) string {
	n, i := name, 1
	for taken[n] {
		i++
		n = fmt.Sprintf("%s~%d", name, i)
	}
	taken[n] = true
	return n
}

// abort removes the temporary file; the final name is never touched.
func (w *pkgWriter) abort() {
	w.tee.close()
	w.af.Abort()
}

// addPrepared appends a file a worker has read and encoded.
func (w *pkgWriter) addPrepared(p *prepared) error {
	name := w.entryName(p.it)
	h := zipw.Header{Name: name, Modified: p.it.mtime, Method: p.method, Mode: p.it.mode.Perm()}
	err := w.zw.WriteRawBytes(h, p.crc, p.it.size, p.data.b)
	if err != nil {
		return fmt.Errorf("%s: %w", w.name, err)
	}
	w.record(p.it, name, p.sums.String(), p.pieces, p.typ)
	return nil
}

func (w *pkgWriter) record(it item, name, hash, pieces, typ string) {
	w.entries = append(w.entries, resourcesync.URL{
		Loc:     resourcesync.LocFor(w.opts.BaseURL, it.rel),
		Lastmod: it.mtime,
		MD: &resourcesync.MD{
			Hash:     hash,
			Length:   resourcesync.Int64(it.size),
			Type:     typ,
			Path:     "/" + name,
			Change:   it.change,
			Datetime: it.datetime,
			Pieces:   piecesOf(pieces),
		},
	})
	w.bytes += it.size
}

// addDeleted records a deletion: a manifest entry with the length, hash
// and lastmod of the version deleted, so that a Destination deletes that
// version and no other, and no bitstream.
func (w *pkgWriter) addDeleted(it item) {
	u := resourcesync.URL{
		Loc:     resourcesync.LocFor(w.opts.BaseURL, it.rel),
		Lastmod: it.mtime,
		MD:      &resourcesync.MD{Change: it.change, Hash: it.oldHash, Datetime: it.datetime},
	}
	if it.size >= 0 {
		u.MD.Length = resourcesync.Int64(it.size)
	}
	w.entries = append(w.entries, u)
}

// manifest encodes the package's Resource Dump or Change Dump Manifest.
func (w *pkgWriter) manifest(completed time.Time) ([]byte, error) {
	var buf bytes.Buffer
	h := resourcesync.Header{Kind: resourcesync.URLSet, MD: resourcesync.MD{
		Capability: resourcesync.CapResourceDumpManifest, At: w.at, Completed: completed,
	}}
	if w.kind.changes() {
		h.MD = resourcesync.MD{Capability: resourcesync.CapChangeDumpManifest, From: w.from, Until: w.until}
	}
	if w.opts.CapabilityList != "" {
		h.Links = []resourcesync.Link{{Rel: "up", Href: w.opts.CapabilityList}}
	}
	if err := resourcesync.EncodeAll(&buf, h, w.entries); err != nil {
		return nil, fmt.Errorf("%s: manifest entry %w", w.name, err)
	}
	return buf.Bytes(), nil
}

// finish writes manifest.xml into the package and its central directory.
// It returns the manifest for publish, which can then run while the next
// package is written.
func (w *pkgWriter) finish(completed time.Time) ([]byte, PackageInfo, error) {
	m, err := w.manifest(completed)
	if err != nil {
		return nil, PackageInfo{}, err
	}
	if err := w.writeManifestEntry(m, completed); err != nil {
		return nil, PackageInfo{}, err
	}
	if err := w.zw.Close(); err != nil {
		return nil, PackageInfo{}, fmt.Errorf("%s: %w", w.name, err)
	}
	info := PackageInfo{
		Name: w.name, Manifest: manifestName(w.name), Length: w.tee.n, SHA256: w.tee.sum(),
		At: w.at, Completed: completed, Bitstreams: len(w.entries), Bytes: w.bytes,
	}
	if w.kind.changes() {
		info.At, info.Completed, info.From, info.Until = time.Time{}, time.Time{}, w.from, w.until
	}
	w.tee.close()
	return m, info, nil
}

// publish writes the detached manifest (and Metalink) and then syncs the
// package and renames it to its final name, last: a package under its
// final name is always complete. On failure the package's temporary file
// is removed.
func (w *pkgWriter) publish(m []byte, info *PackageInfo) error {
	if err := w.out.write(info.Manifest, m); err != nil {
		w.af.Abort()
		return err
	}
	if err := w.writeMetalink(info); err != nil {
		w.af.Abort()
		return err
	}
	return w.af.Commit()
}

func (w *pkgWriter) writeManifestEntry(m []byte, at time.Time) error {
	ew, err := w.zw.Create(zipw.Header{Name: "manifest.xml", Modified: at, Method: zipw.Deflate, Mode: 0o644}, int64(len(m)))
	if err != nil {
		return err
	}
	if _, err := ew.Write(m); err != nil {
		return err
	}
	return ew.Close()
}

// syncDir makes renames in dir durable.
func syncDir(dir string) error { return atomic.SyncDir(dir) }
