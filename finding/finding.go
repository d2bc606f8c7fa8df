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
	// to one that verified).
	Warning
	// Unverified marks a bitstream of the right length whose content could
	// not be checked: no hash at all, or only algorithms rsdump cannot
	// compute. It is never counted as verified.
	Unverified
	// Error marks a broken rule, a corrupt or unsafe entry, a mismatch.
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

// The checks a Finding names, as they appear in reports.
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
)

// Finding is one result of a check. The fields mirror the columns of the
// ok.csv and notok.csv reports.
type Finding struct {
	Severity Severity
	Check    string
	Source   string // the package, document or directory checked (file or URL)
	URI      string // the bitstream's <loc>, or the package URL
	Path     string // the entry in the package, or the file in a tree
	Expected string
	Actual   string
	Msg      string
}

func (f Finding) String() string {
	where := f.Source
	if f.Path != "" {
		where += ": " + f.Path
	} else if f.URI != "" && f.URI != f.Source {
		where += ": " + f.URI
	}
	s := fmt.Sprintf("%s: %s: %s", f.Severity, where, f.Check)
	if f.Msg != "" {
		s += ": " + f.Msg
	}
	if f.Expected != "" || f.Actual != "" {
		s += fmt.Sprintf(" (expected %s, got %s)", orDash(f.Expected), orDash(f.Actual))
	}
	return s
}

// MsgFor is err's message for a finding whose Source is loc, without loc:
// the finding names it already.
func MsgFor(err error, loc string) string {
	var pe *fs.PathError
	if errors.As(err, &pe) && pe.Path == loc && pe == err {
		return pe.Op + ": " + pe.Err.Error()
	}
	return strings.TrimPrefix(err.Error(), loc+": ")
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// Counts sums up the findings of a run.
type Counts struct {
	OK         int `json:"ok"`
	Warnings   int `json:"warnings"`
	Unverified int `json:"unverified"`
	Errors     int `json:"errors"`
}

// Problems is the number of findings that make a run fail.
func (c Counts) Problems() int { return c.Unverified + c.Errors }

// Reporter hands findings to a callback one at a time, from any goroutine,
// and counts them. The zero value discards findings but counts them.
type Reporter struct {
	mu     sync.Mutex
	fn     func(Finding)
	counts Counts
}

// NewReporter returns a Reporter calling fn, which may be nil.
func NewReporter(fn func(Finding)) *Reporter { return &Reporter{fn: fn} }

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
	if r.fn != nil {
		r.fn(f)
	}
}

// Counts returns the totals so far.
func (r *Reporter) Counts() Counts {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.counts
}
