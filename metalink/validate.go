package metalink

import (
	"fmt"
	"strings"

	"github.com/rsdump/rsdump/finding"
	"github.com/rsdump/rsdump/internal/digest"
)

// Validate checks the model against the prose rules of RFC 5854 (its MUST
// and SHOULD statements, which the schema cannot express). Errors make a download unsafe or
// impossible, or the document unwritable; the rest are warnings. Unknown
// foreign markup is never a problem (§5.3).
func (m *Metalink) Validate() []finding.Finding {
	v := &validator{}
	v.root(m)
	v.files(m.Files)
	return v.sink.done()
}

type validator struct {
	sink    sink
	fileIdx int
	name    string
}

func (v *validator) add(sev finding.Severity, code string, r elemRef, format string, args ...any) {
	p := finding.Finding{Severity: sev, Code: code, Msg: fmt.Sprintf(format, args...)}
	locate(&p, v.fileIdx, v.name, r)
	v.sink.add(p)
}

func (v *validator) root(m *Metalink) {
	if len(m.Files) == 0 {
		v.add(finding.Error, CodeNoFiles, elemRef{name: "metalink"}, "a metalink needs at least one <file> (§4.1.1)")
	}
	if m.Generator != "" && !isGenerator(m.Generator) {
		v.add(finding.Warning, CodeGeneratorInvalid, elemRef{name: "generator"}, "%q is not token[\"/\"token] (§4.2.3)", m.Generator)
	}
	v.text(elemRef{name: "generator"}, m.Generator)
	if m.Origin != "" {
		v.iri(elemRef{name: "origin"}, m.Origin, true)
	} else if m.Dynamic != nil {
		v.add(finding.Error, CodeOriginMissing, elemRef{name: "origin", attr: "dynamic"}, "dynamic is set but there is no origin IRI")
	}
	for _, d := range []struct {
		name string
		year int
	}{{"published", m.Published.Year()}, {"updated", m.Updated.Year()}} {
		if d.year < 0 || d.year > 9999 {
			v.add(finding.Error, CodeDateInvalid, elemRef{name: d.name}, "year %d cannot be written as an RFC 3339 date", d.year)
		}
	}
	v.extensions(elemRef{name: "extension"}, m.Extensions)
}

// files checks each file, and that names are unique (§4.1.2.1); names that
// differ only in case collide on case-insensitive file systems.
func (v *validator) files(files []File) {
	names := make(map[string]int, len(files))
	folded := make(map[string]int)
	for i := range files {
		f := &files[i]
		v.fileIdx, v.name = i+1, f.Name
		v.file(f)
		if f.Name == "" {
			continue
		}
		ref := elemRef{name: "file", attr: "name"}
		if j, dup := names[f.Name]; dup {
			v.add(finding.Error, CodeNameDuplicate, ref, "file[%d] has the same name (§4.1.2.1 MUST be unique)", j)
			continue
		}
		names[f.Name] = i + 1
		fold := strings.ToLower(f.Name)
		if j, dup := folded[fold]; dup {
			v.add(finding.Warning, CodeNameCaseDuplicate, ref, "differs from file[%d] only in letter case", j)
		} else {
			folded[fold] = i + 1
		}
	}
	v.fileIdx, v.name = 0, ""
}

func (v *validator) file(f *File) {
	v.fileName(elemRef{name: "file", attr: "name"}, f.Name)
	if len(f.URLs) == 0 && len(f.MetaURLs) == 0 {
		v.add(finding.Error, CodeNoSource, elemRef{name: "file"}, "no <url> and no <metaurl>: nothing to download from (§4.1.2)")
	}
	switch {
	case f.Size == nil:
		v.add(finding.Warning, CodeSizeMissing, elemRef{name: "size"}, "no <size>: mirrors cannot be checked by length (§4.2.14)")
	case *f.Size < 0:
		v.add(finding.Error, CodeSizeInvalid, elemRef{name: "size"}, "size %d is negative", *f.Size)
	}
	v.hashes(f)
	v.pieces(f)
	v.urls(f.URLs)
	v.metaURLs(f.MetaURLs)
	v.metadata(f)
	v.extensions(elemRef{name: "extension"}, f.Extensions)
}

func (v *validator) hashes(f *File) {
	byType := make(map[string]string, len(f.Hashes))
	known, strong := false, false
	for i, h := range f.Hashes {
		ref := elemRef{"hash", i + 1, ""}
		if h.Type == "" {
			v.add(finding.Error, CodeHashNoType, ref, "a whole-file <hash> must have a type (§4.2.4.1)")
			continue
		}
		if prev, dup := byType[strings.ToLower(h.Type)]; dup {
			if prev != h.Value {
				v.add(finding.Error, CodeHashConflict, ref, "two %s hashes with different values", h.Type)
			} else {
				v.add(finding.Warning, CodeDuplicate, ref, "repeated %s hash", h.Type)
			}
			continue
		}
		byType[strings.ToLower(h.Type)] = h.Value
		v.text(elemRef{ref.name, ref.idx, "type"}, h.Type)
		if v.hexValue(ref, h.Type, h.Value) {
			known = true
			strong = strong || digest.Strong(h.Type)
		}
	}
	if known && !strong {
		v.add(finding.Warning, CodeHashWeak, elemRef{name: "hash"}, "no sha-256 or stronger whole-file hash (§7.4)")
	}
	if !known && !f.hasUsablePieces() {
		v.add(finding.Warning, CodeNoHash, elemRef{name: "file"}, "no usable hash: the download cannot be verified")
	}
}

// hexValue checks one hash value and reports whether it can be used.
func (v *validator) hexValue(ref elemRef, alg, val string) bool {
	n, ok := HashHexLen(alg)
	if !ok {
		v.add(finding.Warning, CodeHashUnknownType, ref, "hash type %q is not a supported IANA hash name; it cannot be verified", alg)
		v.text(ref, val)
		return false
	}
	switch hex, upper := scanHex(val, n); {
	case !hex:
		v.add(finding.Error, CodeHashMalformed, ref, "%s value %q is not %d hex digits", alg, shorten(val), n)
		return false
	case upper:
		v.add(finding.Warning, CodeHashUppercase, ref, "hash values are lower-case hex (§4.2.4)")
	}
	return true
}

func (f *File) hasUsablePieces() bool {
	_, ok := f.StrongestPieces()
	return ok
}

func (v *validator) pieces(f *File) {
	types := make(map[string]bool, len(f.Pieces))
	for i, p := range f.Pieces {
		ref := elemRef{"pieces", i + 1, ""}
		switch {
		case p.Type == "":
			v.add(finding.Error, CodePiecesType, elemRef{ref.name, ref.idx, "type"}, "<pieces> must have a type (§4.1.3.1)")
		case types[strings.ToLower(p.Type)]:
			v.add(finding.Error, CodePiecesDuplicate, ref, "a second <pieces> of type %s (§4.1.3)", p.Type)
		}
		types[strings.ToLower(p.Type)] = true
		v.text(elemRef{ref.name, ref.idx, "type"}, p.Type)
		if p.Length <= 0 {
			v.add(finding.Error, CodePiecesLength, elemRef{ref.name, ref.idx, "length"}, "length must be a positive integer (§4.1.3.2)")
		}
		if len(p.Hashes) == 0 {
			v.add(finding.Error, CodePiecesEmpty, ref, "<pieces> must contain at least one <hash>")
		}
		v.pieceHashes(ref, p)
		v.pieceCount(ref, p, f.Size)
	}
}

// pieceHashes reports the first bad hash and how many there are, rather
// than one problem per hash.
func (v *validator) pieceHashes(ref elemRef, p Pieces) {
	n, known := HashHexLen(p.Type)
	if !known {
		if p.Type != "" {
			v.add(finding.Warning, CodeHashUnknownType, ref, "pieces type %q is not a supported IANA hash name; pieces cannot be verified", p.Type)
		}
		for _, h := range p.Hashes {
			v.text(ref, h)
		}
		return
	}
	bad, first, upper := 0, -1, false
	for i, h := range p.Hashes {
		hex, up := scanHex(h, n)
		if !hex {
			bad++
			if first < 0 {
				first = i
			}
		}
		upper = upper || hex && up
	}
	if bad > 0 {
		v.add(finding.Error, CodeHashMalformed, ref, "%d of %d piece hashes are not %d hex digits, the first is hash[%d] %q",
			bad, len(p.Hashes), n, first+1, shorten(p.Hashes[first]))
	}
	if upper {
		v.add(finding.Warning, CodeHashUppercase, ref, "hash values are lower-case hex (§4.2.4)")
	}
}

// pieceCount checks §4.1.3: all pieces but the last are Length bytes, so
// there are ceil(size/length) of them.
func (v *validator) pieceCount(ref elemRef, p Pieces, size *int64) {
	switch {
	case p.Length <= 0 || len(p.Hashes) == 0:
	case size == nil:
		v.add(finding.Warning, CodePiecesNoSize, ref, "no <size>, so the number of pieces cannot be checked")
	case *size >= 0 && int64(len(p.Hashes)) != pieceCount(*size, p.Length):
		v.add(finding.Error, CodePiecesCount, ref, "%d piece hashes, but size %d in pieces of %d needs %d",
			len(p.Hashes), *size, p.Length, pieceCount(*size, p.Length))
	}
}

func shorten(s string) string {
	if len(s) > 40 {
		return s[:37] + "..."
	}
	return s
}
