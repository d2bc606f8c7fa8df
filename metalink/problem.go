package metalink

import (
	"errors"
	"fmt"

	"github.com/rsdump/rsdump/finding"
)

// The codes of metalink's findings (finding.Finding.Code). A code names a
// rule and is stable; Msg explains the case. A finding's Path is the
// file's name ("" for the document itself or a nameless file, which
// Element then addresses by position: "file[2]/url[1]"); Element locates
// the element or attribute XPath-style within the file, e.g.
// "url[2]@priority"; Line is set for findings of the decoder.
// The decoder reports some rules as warnings when it repaired the document
// by ignoring the offending value (an invalid priority, a signature
// without a media type); Validate reports the same rule as an error when
// the value is in the model, because Encode could not write it.
const (
	// Fatal: Decode returns these as its error, with no document.
	CodeRead        = "read"
	CodeSyntax      = "xml-syntax"
	CodeNotMetalink = "not-metalink"
	CodeLimitBytes  = "limit-bytes"
	CodeLimitToken  = "limit-token"
	CodeLimitFiles  = "limit-files"
	CodeLimitPieces = "limit-pieces"
	CodeLimitDepth  = "limit-depth"

	// Reported while decoding.
	CodeMetalink3        = "metalink3"
	CodeV3Unsupported    = "v3-unsupported"
	CodeUnknownElement   = "unknown-element"
	CodeUnknownAttribute = "unknown-attribute"
	CodeUnboundPrefix    = "xml-unbound-prefix"
	CodeTextChildren     = "text-children"
	CodeDuplicate        = "element-duplicate"
	CodeWhitespace       = "whitespace"
	CodeOriginDynamic    = "origin-dynamic"
	CodePublisherV3      = "publisher-v3"
	CodePieceHashType    = "piece-hash-type"

	// Reported by Validate (and some while decoding).
	CodeNoFiles           = "no-files"
	CodeNameMissing       = "name-missing"
	CodeNameTraversal     = "name-traversal"
	CodeNameInvalid       = "name-invalid"
	CodeNameDuplicate     = "name-duplicate"
	CodeNameCaseDuplicate = "name-case-duplicate"
	CodeNameQuestionable  = "name-questionable"
	CodeNoSource          = "no-source"
	CodeSizeMissing       = "size-missing"
	CodeSizeInvalid       = "size-invalid"
	CodeSizeDuplicate     = "size-duplicate"
	CodeHashNoType        = "hash-no-type"
	CodeHashUnknownType   = "hash-unknown-type"
	CodeHashMalformed     = "hash-malformed"
	CodeHashUppercase     = "hash-uppercase"
	CodeHashConflict      = "hash-conflict"
	CodeHashWeak          = "hash-weak"
	CodeNoHash            = "no-hash"
	CodePiecesType        = "pieces-type"
	CodePiecesLength      = "pieces-length"
	CodePiecesEmpty       = "pieces-empty"
	CodePiecesCount       = "pieces-count"
	CodePiecesDuplicate   = "pieces-duplicate"
	CodePiecesNoSize      = "pieces-no-size"
	CodeURLEmpty          = "url-empty"
	CodeURLInvalid        = "url-invalid"
	CodeURLRelative       = "url-relative"
	CodeIRIInvalid        = "iri-invalid"
	CodePriorityInvalid   = "priority-invalid"
	CodeLocationInvalid   = "location-invalid"
	CodeMetaURLMediaType  = "metaurl-mediatype"
	CodeSignatureMedia    = "signature-mediatype"
	CodePublisherName     = "publisher-name"
	CodeLanguageInvalid   = "language-invalid"
	CodeGeneratorInvalid  = "generator-invalid"
	CodeOriginMissing     = "origin-missing"
	CodeDateInvalid       = "date-invalid"
	CodeExtensionInvalid  = "extension-invalid"
	CodeXMLChar           = "xml-char"
	CodeTooManyProblems   = "too-many-problems"
)

// Sentinel errors that fatal findings unwrap to.
var (
	ErrNotMetalink = errors.New("not a metalink document")
	ErrLimit       = errors.New("document exceeds a decoding limit")
)

// maxProblems caps each severity so that a hostile document cannot make
// the problem list grow without bound.
const maxProblems = 1000

// sink collects problems under the cap and remembers what it dropped, so
// that an error is never lost without trace.
type sink struct {
	list             []finding.Finding
	nWarn, nErr      int
	dropWarn, dropEr int
}

func (s *sink) add(p finding.Finding) {
	n, drop := &s.nWarn, &s.dropWarn
	if p.Severity == finding.Error {
		n, drop = &s.nErr, &s.dropEr
	}
	if *n >= maxProblems {
		*drop++
		return
	}
	*n++
	s.list = append(s.list, p)
}

func (s *sink) done() []finding.Finding {
	if s.dropWarn+s.dropEr == 0 {
		return s.list
	}
	sev := finding.Warning
	if s.dropEr > 0 {
		sev = finding.Error
	}
	return append(s.list, finding.Finding{Severity: sev, Code: CodeTooManyProblems,
		Msg: fmt.Sprintf("%d more errors and %d more warnings not listed", s.dropEr, s.dropWarn)})
}

// elemRef names an element (or attribute) inside a file or the document:
// name, 1-based index among same-named siblings (0 for singletons) and attr.
type elemRef struct {
	name string
	idx  int
	attr string
}

func (r elemRef) String() string {
	s := r.name
	if r.idx > 0 {
		s += fmt.Sprintf("[%d]", r.idx)
	}
	if r.attr != "" {
		s += "@" + r.attr
	}
	return s
}

// locate fills File and Element for a reference inside file number fileIdx
// (1-based; 0 is the document level). A nameless file is addressed by
// position so that its problems can still be found.
func locate(p *finding.Finding, fileIdx int, fileName string, r elemRef) {
	switch {
	case fileIdx == 0:
		p.Element = r.String()
	case r.name == "file":
		p.Path = fileName
		p.Element = elemRef{"file", fileIdx, r.attr}.String()
	case fileName == "":
		p.Element = fmt.Sprintf("file[%d]/%s", fileIdx, r)
	default:
		p.Path = fileName
		p.Element = r.String()
	}
}

// supersededBy lists Validate findings that add nothing when the decoder
// already reported a related problem at the same place: a size that could
// not be parsed is also, to Validate, a missing size.
var supersededBy = map[string]string{
	CodeSizeMissing: CodeSizeInvalid,
}

// mergeProblems appends Validate's findings to the decoder's, dropping any
// that repeat or are superseded by a decoder finding at the same place.
func mergeProblems(dec, val []finding.Finding) []finding.Finding {
	if len(val) == 0 {
		return dec
	}
	type key struct{ code, file, elem string }
	seen := make(map[key]bool, len(dec))
	for _, p := range dec {
		seen[key{p.Code, p.Path, p.Element}] = true
	}
	out := dec
	for _, p := range val {
		if seen[key{p.Code, p.Path, p.Element}] || seen[key{supersededBy[p.Code], p.Path, p.Element}] {
			continue
		}
		out = append(out, p)
	}
	return out
}
