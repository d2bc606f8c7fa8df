package finding

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"sync"
)

// Severity ranks a Finding.
type Severity int

const (
	// OK records something that was checked and held: a bitstream whose
	// length and every computable hash matched, a package whose length and
	// hash matched the dump document.
	OK Severity = iota
	// Warning marks something accepted whose meaning is clear but that
	// breaks a recommendation or that other tools may read differently
	// (resync's relative paths, a hash algorithm nobody can compute next
	// to one that verified), or a document a decoder repaired by ignoring
	// a value.
	Warning
	// Unverified marks a bitstream of the right length whose content could
	// not be checked: no hash at all, or only algorithms rsdump cannot
	// compute. It is never counted as verified.
	Unverified
	// Error marks a broken rule of a specification or schema, a corrupt
	// or unsafe entry, a mismatch: what makes a document unsafe or
	// impossible to use.
	Error
)

func (s Severity) String() string {
	switch s {
	case OK:
		return "ok"
	case Warning:
		return "warning"
	case Unverified:
		return "unverified"
	}
	return "error"
}

// Problem reports whether s stands for something not verified: an error
// or an unverified bitstream. Warnings are not problems.
func (s Severity) Problem() bool { return s >= Unverified }

// The checks pkgread, verify and unpack report: the Code of their
// findings, as it appears in reports.
const (
	CheckZip        = "zip"         // the archive structure: central directory, local headers
	CheckName       = "name"        // an entry name that leaves the package root or is not canonical
	CheckDuplicate  = "duplicate"   // two entries with the same name
	CheckOverlap    = "overlap"     // entries sharing bytes (a zip bomb technique)
	CheckCRC        = "crc"         // CRC-32 of an entry
	CheckSize       = "size"        // declared sizes against actual ones
	CheckBomb       = "bomb"        // expansion beyond the configured ratio
	CheckManifest   = "manifest"    // manifest.xml: presence, syntax, capability, rules
	CheckTime       = "time"        // Appendix A time attributes
	CheckPath       = "path"        // a manifest path and the entry it names
	CheckOrder      = "order"       // forward chronological order of changes
	CheckOrphan     = "orphan"      // an entry the manifest does not list
	CheckMissing    = "missing"     // a manifest entry, package or file that is absent
	CheckLength     = "length"      // a bitstream's or package's length
	CheckHash       = "hash"        // a bitstream's or package's digest
	CheckHashAlg    = "hash-alg"    // a hash algorithm rsdump cannot compute
	CheckBitstream  = "bitstream"   // the verdict on one bitstream
	CheckPackage    = "package"     // the verdict on one package against its dump document
	CheckDetached   = "detached"    // the detached manifest against manifest.xml
	CheckDocument   = "document"    // a dump document, index or resource list
	CheckExtra      = "extra"       // a file in the tree that is not listed
	CheckRead       = "read"        // an I/O error reading an input
	CheckInflate    = "inflate"     // a compressed stream that does not decode
	CheckCompressed = "compression" // a compression method rsdump cannot read
	CheckClash      = "clash"       // a target two packages of a dump carry, or names that collide on macOS and Windows
	CheckWindow     = "window"      // a package's manifest at/from/until against its dump document's entry
)

// MsgFor is err's message for a finding whose Source is loc, without loc:
// the finding names it already.
func MsgFor(err error, loc string) string {
	var pe *fs.PathError
	if errors.As(err, &pe) && pe.Path == loc && pe == err {
		return pe.Op + ": " + pe.Err.Error()
	}
	return strings.TrimPrefix(err.Error(), loc+": ")
}

// Finding is one result of a check: its severity, the rule or check it
// names (Code), where it was found (Source, URI, Path, Entry, Element,
// Line: whichever apply) and what was found (Msg, Expected, Actual).
// verify's ok.csv and notok.csv reports have its columns.
type Finding struct {
	Severity Severity
	// Code names the check or rule, stably: verify's "crc" (its Check
	// constants), metalink's "hash-weak" (its Code constants).
	Code     string
	Source   string // the package, document or directory checked (file or URL)
	URI      string // a resource's <loc> (a bitstream's, an entry's), or the package URL
	Path     string // the entry in a package, the file in a tree, the file of a Metalink
	Entry    int    // the 1-based entry of a ResourceSync document; 0 for its header, or none
	Element  string // the element or attribute, XPath-style, within Path or the document: "url[2]@priority"
	Line     int    // the document's line, when a decoder knows it
	Expected string
	Actual   string
	Msg      string
	Err      error // the cause (Metalink's fatal findings: ErrNotMetalink, ErrLimit, a read error)
}

// String is the finding in one line: "error: SOURCE: PATH: CHECK: MSG
// (expected E, got A)", each part only when set; the URI stands for the
// path when there is none, unless it is the source.
func (f Finding) String() string {
	parts := []string{f.Severity.String()}
	add := func(s string) {
		if s != "" {
			parts = append(parts, s)
		}
	}
	add(f.Source)
	if f.Path != "" {
		add(f.Path)
	} else if f.URI != f.Source {
		add(f.URI)
	}
	if f.Entry > 0 {
		add(fmt.Sprintf("entry %d", f.Entry))
	}
	add(f.Element)
	add(f.Code)
	add(f.Msg)
	s := strings.Join(parts, ": ")
	if f.Expected != "" || f.Actual != "" {
		s += fmt.Sprintf(" (expected %s, got %s)", orDash(f.Expected), orDash(f.Actual))
	}
	if f.Line > 0 {
		s += fmt.Sprintf(" (line %d)", f.Line)
	}
	return s
}

// Error makes a finding an error (metalink's fatal ones are): its String.
func (f *Finding) Error() string { return f.String() }

// Unwrap is the finding's cause, Err.
func (f *Finding) Unwrap() error { return f.Err }

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// HasErrors reports whether any finding is an Error.
func HasErrors(fs []Finding) bool {
	for i := range fs {
		if fs[i].Severity == Error {
			return true
		}
	}
	return false
}

// Err returns nil when no finding is an Error, else an error whose
// message is prefix and the first one's, and which unwraps to every
// *Finding that is an Error.
func Err(prefix string, fs []Finding) error {
	var errs []error
	for i := range fs {
		if fs[i].Severity == Error {
			errs = append(errs, &fs[i])
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return findingsError{prefix, errs}
}

type findingsError struct {
	prefix string
	errs   []error
}

func (e findingsError) Error() string {
	if len(e.errs) == 1 {
		return e.prefix + e.errs[0].Error()
	}
	return fmt.Sprintf("%s%s (and %d more errors)", e.prefix, e.errs[0].Error(), len(e.errs)-1)
}

func (e findingsError) Unwrap() []error { return e.errs }

// Counts sums up the findings of a run.
type Counts struct {
	OK         int `json:"ok"`
	Warnings   int `json:"warnings"`
	Unverified int `json:"unverified"`
	Errors     int `json:"errors"`
}

// Problems is the number of findings that make a run fail.
func (c Counts) Problems() int { return c.Unverified + c.Errors }

// Reporter counts findings and hands them, one at a time, with every
// other event, to an Options.Events callback; it may be called from any
// goroutine. The zero value discards findings but counts them.
type Reporter struct {
	mu     sync.Mutex
	events func(Event)
	counts Counts
}

// NewReporter returns a Reporter passing events on to events, which may
// be nil.
func NewReporter(events func(Event)) *Reporter { return &Reporter{events: events} }

// Report counts f and passes it on.
func (r *Reporter) Report(f Finding) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch f.Severity {
	case OK:
		r.counts.OK++
	case Warning:
		r.counts.Warnings++
	case Unverified:
		r.counts.Unverified++
	default:
		r.counts.Errors++
	}
	if r.events != nil {
		r.events(f)
	}
}

// Send passes e on: a Finding as Report does, counted and one at a time;
// any other event at once, from the caller's goroutine. A Reporter's Send
// is the events of another, whose findings it counts too.
func (r *Reporter) Send(e Event) {
	if f, ok := e.(Finding); ok {
		r.Report(f)
		return
	}
	if r.events != nil {
		r.events(e)
	}
}

// Counts returns the totals so far.
func (r *Reporter) Counts() Counts {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.counts
}
