package pkgread

import (
	"archive/zip"
	"sort"

	"github.com/rsdump/rsdump/finding"
)

// span is the byte range of an entry's compressed data.
type span struct {
	start, end int64
	name       string
}

// addSpan keeps the bytes of entry f, read, whose local header checkLocal
// found at start, its data at data.
func (p *Package) addSpan(f *zip.File, start, data int64) {
	p.spans = append(p.spans, span{data, data + clampInt64(f.CompressedSize64), f.Name})
	// Its bytes for checkTiling, taken now, while the reads are near
	// them: one front-to-back pass.
	r, err := p.entryRangeAt(f, start, data)
	p.tiles[f] = tile{r, err}
}

// CheckLayout reports what reading the bitstreams does not: entries that
// share bytes, the trick of non-recursive zip bombs (and a sign of a
// forged central directory), data that runs past the end of the file,
// directory entries whose local headers disagree with the central
// directory or that carry data, and bytes no entry accounts for
// (checkTiling). Call it after the last Read.
func (p *Package) CheckLayout() {
	p.checkDirectories()
	p.checkTiling()
	s := p.spans
	sort.Slice(s, func(i, j int) bool {
		return s[i].start < s[j].start || s[i].start == s[j].start && s[i].name < s[j].name
	})
	for i := range s {
		if s[i].end > p.size {
			p.report(finding.Finding{Severity: finding.Error, Code: finding.CheckSize, Path: s[i].name, Msg: "entry data runs past the end of the file (truncated package)"})
		}
	}
	p.spans = p.spans[:0]
}

// Span is where b's entry lies in the package (its local header, data
// and data descriptor), as the layout check takes it: from the read of b,
// else read now from its local header. A reader that lets go of the
// package's bytes as it goes (a held download) takes the span of an
// entry it skips before it passes it.
func (p *Package) Span(b *Bitstream) (start, end int64, err error) {
	t, ok := p.tiles[b.File]
	if !ok {
		t.r, t.err = p.entryRange(b.File)
		p.tiles[b.File] = t
	}
	return t.r.start, t.r.end, t.err
}

// KnownSpan gives the layout check b's span as an earlier read of the
// same package found it (unpack's resumed staging), instead of a read.
func (p *Package) KnownSpan(b *Bitstream, start, end int64) {
	p.tiles[b.File] = tile{r: byteRange{start: start, end: end, name: b.File.Name}}
}

// HeaderOffset is where b's local header starts, from the central
// directory, without a read; -1 when unknown.
func (p *Package) HeaderOffset(b *Bitstream) int64 {
	off, err := p.headerOffset(b.File)
	if err != nil {
		return -1
	}
	return off
}

// Others are the package's entries that are no bitstream's (directories,
// the manifest, entries no manifest line names), in file order, each
// with where its local header starts (-1 when unknown).
func (p *Package) Others() ([]*zip.File, []int64) {
	mine := make(map[*zip.File]bool, len(p.Bitstreams))
	for _, b := range p.Bitstreams {
		if b.File != nil {
			mine[b.File] = true
		}
	}
	var fs []*zip.File
	for _, f := range p.zr.File {
		if !mine[f] {
			fs = append(fs, f)
		}
	}
	fs = p.inFileOrder(fs)
	offs := make([]int64, len(fs))
	for i, f := range fs {
		off, err := p.headerOffset(f)
		if err != nil {
			off = -1
		}
		offs[i] = off
	}
	return fs, offs
}

// Visit reads now what CheckLayout needs of entry f, which no Read
// reads: its span, and for a directory the check of its local header. A
// reader that lets go of the package's bytes as it goes visits such
// entries before it passes them.
func (p *Package) Visit(f *zip.File) {
	if p.visited[f] {
		return
	}
	p.visited[f] = true
	if len(f.Name) > 0 && f.Name[len(f.Name)-1] == '/' {
		p.checkDirectory(f)
	}
	if _, ok := p.tiles[f]; !ok {
		var t tile
		t.r, t.err = p.entryRange(f)
		p.tiles[f] = t
	}
}
