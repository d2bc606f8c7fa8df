package pack

import (
	"errors"

	"github.com/rsdump/rsdump/internal/sitemap"
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

// mirrorLinks lists a package's mirrors as rel="duplicate" links with
// their priority, and its Metalink as rel="describedby".
func mirrorLinks(o *Options, p PackageInfo) []sitemap.Link {
	var ls []sitemap.Link
	for _, m := range o.Metalink.Mirrors {
		ls = append(ls, sitemap.Link{Rel: "duplicate", Href: withSlash(m.BaseURL) + p.Name, Pri: m.Priority})
	}
	if p.Metalink != "" {
		ls = append(ls, sitemap.Link{Rel: "describedby", Href: o.DumpURL + p.Metalink, Type: "application/metalink4+xml"})
	}
	return ls
}

func (w *pkgWriter) writeMetalink(info *PackageInfo) error {
	if w.opts.Metalink == nil {
		return nil
	}
	return errors.New("metalink output is not available yet")
}
