package metalink

import (
	"errors"
	"fmt"
	"strings"
)

// Severity says whether a Problem only deserves attention (Warning) or
// makes the document unsafe or impossible to use (Error).
type Severity int

const (
	Warning Severity = iota
	Error
)

func (s Severity) String() string {
	if s == Error {
		return "error"
	}
	return "warning"
}

// Problem codes. A code names a rule and is stable; Msg explains the case.
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

// Sentinel errors that fatal Problems unwrap to.
var (
	ErrNotMetalink = errors.New("not a metalink document")
	ErrLimit       = errors.New("document exceeds a decoding limit")
)

// Problem is one finding about a document. File is the file's name ("" for
// the document itself or a nameless file); Element locates the element or
// attribute XPath-style within the file, e.g. "url[2]@priority"; Line is
// set for problems found while decoding.
type Problem struct {
	Severity Severity
	Code     string
	File     string
	Element  string
	Line     int
	Msg      string
	Err      error // cause of a fatal decode error, if any
}

func (p *Problem) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "metalink: %s %s: ", p.Severity, p.Code)
	if p.File != "" {
		fmt.Fprintf(&b, "file %q: ", p.File)
	}
	if p.Element != "" {
		b.WriteString(p.Element + ": ")
	}
	b.WriteString(p.Msg)
	if p.Line > 0 {
		fmt.Fprintf(&b, " (line %d)", p.Line)
	}
	return b.String()
}

func (p *Problem) Unwrap() error { return p.Err }

// Problems is a list of findings in document order.
type Problems []Problem

// HasErrors reports whether any problem is an Error.
func (ps Problems) HasErrors() bool {
	for i := range ps {
		if ps[i].Severity == Error {
			return true
		}
	}
	return false
}

// Has reports whether a problem with the code is present.
func (ps Problems) Has(code string) bool {
	for i := range ps {
		if ps[i].Code == code {
			return true
		}
	}
	return false
}

// Err returns nil when no problem is an Error, else an error whose
// message names the first one and which unwraps to every *Problem.
func (ps Problems) Err() error {
	var errs []error
	for i := range ps {
		if ps[i].Severity == Error {
			errs = append(errs, &ps[i])
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return problemsError(errs)
}

type problemsError []error

func (e problemsError) Error() string {
	if len(e) == 1 {
		return e[0].Error()
	}
	return fmt.Sprintf("%s (and %d more errors)", e[0].Error(), len(e)-1)
}

func (e problemsError) Unwrap() []error { return e }

// maxProblems caps each severity so that a hostile document cannot make
// the problem list grow without bound.
const maxProblems = 1000

// sink collects problems under the cap and remembers what it dropped, so
// that an error is never lost without trace.
type sink struct {
	list             Problems
	nWarn, nErr      int
	dropWarn, dropEr int
}

func (s *sink) add(p Problem) {
	n, drop := &s.nWarn, &s.dropWarn
	if p.Severity == Error {
		n, drop = &s.nErr, &s.dropEr
	}
	if *n >= maxProblems {
		*drop++
		return
	}
	*n++
	s.list = append(s.list, p)
}

func (s *sink) done() Problems {
	if s.dropWarn+s.dropEr == 0 {
		return s.list
	}
	sev := Warning
	if s.dropEr > 0 {
		sev = Error
	}
	return append(s.list, Problem{Severity: sev, Code: CodeTooManyProblems,
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
func locate(p *Problem, fileIdx int, fileName string, r elemRef) {
	switch {
	case fileIdx == 0:
		p.Element = r.String()
	case r.name == "file":
		p.File = fileName
		p.Element = elemRef{"file", fileIdx, r.attr}.String()
	case fileName == "":
		p.Element = fmt.Sprintf("file[%d]/%s", fileIdx, r)
	default:
		p.File = fileName
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
func mergeProblems(dec, val Problems) Problems {
	if len(val) == 0 {
		return dec
	}
	type key struct{ code, file, elem string }
	seen := make(map[key]bool, len(dec))
	for _, p := range dec {
		seen[key{p.Code, p.File, p.Element}] = true
	}
	out := dec
	for _, p := range val {
		if seen[key{p.Code, p.File, p.Element}] || seen[key{supersededBy[p.Code], p.File, p.Element}] {
			continue
		}
		out = append(out, p)
	}
	return out
}
