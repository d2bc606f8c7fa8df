package pack

import (
	"bytes"
	"cmp"
	"slices"
	"strings"

	"github.com/rsdump/rsdump/layout"
	"github.com/rsdump/rsdump/metalink"
	"github.com/rsdump/rsdump/resourcesync"
)

// pieceLength is the Metalink piece length for packages, or 0 when no
// Metalink is written. It is fixed for the run, chosen from the package
// size limit, because pieces are hashed while a package is written, before
// its final size is known.
func pieceLength(o *Options) int64 {
	if o.Metalink == nil {
		return 0
	}
	if o.Metalink.PieceLength > 0 {
		return o.Metalink.PieceLength
	}
	return defaultPieceLength(o.MaxPackageSize)
}

// defaultPieceLength: a power of two from 256 KiB to 16 MiB, so that a
// full package has at most about 4,096 pieces.
func defaultPieceLength(size int64) int64 {
	n := int64(256 << 10)
	for n < 16<<20 && (size+n-1)/n > 4096 {
		n *= 2
	}
	return n
}

func metalinkName(pkg string) string { return pkg + ".meta4" }

// mirrorLinks lists the places a package is published other than its
// <loc> as rel="duplicate" links with their priority, and its Metalink as
// rel="describedby".
func mirrorLinks(o *Options, p PackageInfo) []resourcesync.Link {
	var ls []resourcesync.Link
	for _, m := range places(o) {
		if m.BaseURL != o.DumpURL {
			ls = append(ls, resourcesync.Link{Rel: "duplicate", Href: m.BaseURL + p.Name, Pri: m.Priority})
		}
	}
	if p.Metalink != "" {
		ls = append(ls, resourcesync.Link{Rel: "describedby", Href: o.DumpURL + p.Metalink, Type: "application/metalink4+xml"})
	}
	return ls
}

// places lists where the packages are published, each once: the dump URL
// (the first mirror unless --dump-url was given), then the mirrors, in the
// order given. The dump URL, the package's <loc>, has priority 1, as a
// reader of the dump document takes it; every other place the priority
// given to it, or else its position. So every URL of a Metalink carries a
// priority, and a client taking the first URL takes the <loc>. They are
// returned by priority, ties in the order given.
func places(o *Options) []layout.Mirror {
	ps := []layout.Mirror{{BaseURL: o.DumpURL, Priority: 1}}
	for _, m := range o.Metalink.Mirrors {
		if m.BaseURL == o.DumpURL {
			ps[0].Location = cmp.Or(ps[0].Location, m.Location)
			continue
		}
		if slices.ContainsFunc(ps, func(p layout.Mirror) bool { return p.BaseURL == m.BaseURL }) {
			continue
		}
		m.Priority = cmp.Or(m.Priority, len(ps)+1)
		ps = append(ps, m)
	}
	slices.SortStableFunc(ps, func(a, b layout.Mirror) int { return cmp.Compare(a.Priority, b.Priority) })
	return ps
}

// writeMetalink writes NAME.zip.meta4 beside the package: its size,
// sha-256, the sha-256 of every piece (hashed while the package was
// written) and a URL per place it is published.
func (w *pkgWriter) writeMetalink(info *PackageInfo) error {
	if w.opts.Metalink == nil {
		return nil
	}
	m := packageMetalink(w.opts, *info, w.tee.pieces.length, w.tee.pieces.finish())
	sig, err := w.packageSignature()
	if err != nil {
		return err
	}
	m.Files[0].Signature = sig
	var buf bytes.Buffer
	if err := metalink.Encode(&buf, m); err != nil {
		return err
	}
	info.Metalink = metalinkName(info.Name)
	return w.out.write(info.Metalink, buf.Bytes())
}

func packageMetalink(o *Options, p PackageInfo, pieceLen int64, pieces []string) *metalink.Metalink {
	f := metalink.File{
		Name:   p.Name,
		Size:   &p.Length,
		Hashes: []metalink.Hash{{Type: "sha-256", Value: p.SHA256}},
		Pieces: []metalink.Pieces{{Type: "sha-256", Length: pieceLen, Hashes: pieces}},
		URLs:   packageURLs(o, p.Name),
	}
	return &metalink.Metalink{Generator: "rsdump", Published: p.Completed, Files: []metalink.File{f}}
}

// packageURLs lists every place the package is published, each with its
// priority.
func packageURLs(o *Options, name string) []metalink.URL {
	var urls []metalink.URL
	for _, m := range places(o) {
		urls = append(urls, metalink.URL{URL: m.BaseURL + name, Priority: m.Priority, Location: strings.ToLower(m.Location)})
	}
	return urls
}
