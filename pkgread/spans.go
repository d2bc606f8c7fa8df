package pkgread

import (
	"archive/zip"
	"fmt"
	"sort"

	"github.com/rsdump/rsdump/finding"
)

// span is the byte range of an entry's compressed data.
type span struct {
	start, end int64
	name       string
}

func (p *Package) addSpan(f *zip.File) {
	off, err := f.DataOffset()
	if err != nil {
		return // reported by the read itself
	}
	p.spans = append(p.spans, span{off, off + clampInt64(f.CompressedSize64), f.Name})
	// Its bytes for checkTiling, taken now, while the reads are near
	// them: one front-to-back pass.
	r, err := p.entryRangeAt(f, off)
	p.tiles[f] = tile{r, err}
}

// CheckLayout reports what reading the bitstreams does not: entries whose
// data share bytes, the trick of non-recursive zip bombs (and a sign of a
// forged central directory), data that runs past the end of the file, and
// directory entries whose local headers disagree with the central
// directory or that carry data, and bytes no entry accounts for
// (checkTiling). The overlaps cover the entries read so far; call it after the
// last Read.
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
		if i > 0 && s[i].start < s[i-1].end {
			p.report(finding.Finding{Severity: finding.Error, Code: finding.CheckOverlap, Path: s[i].name, Msg: fmt.Sprintf("entry data overlaps that of %s", s[i-1].name)})
		}
	}
	p.spans = p.spans[:0]
}
