package pack

import (
	"errors"
	"fmt"
	"time"

	"github.com/rsdump/rsdump/layout"
)

// PackageDone is the event (finding.Event) of a finished package.
type PackageDone struct {
	Package PackageInfo
}

// Removed is the event (finding.Event) of a file of an earlier run in the
// output directory that the new dump no longer names, deleted once the
// new dump was in place.
type Removed struct {
	Name string
}

// PackageInfo describes a written package.
type PackageInfo struct {
	Name       string // file name in the output directory
	Manifest   string // file name of the detached manifest
	Metalink   string // file name of the .meta4, when written
	Length     int64
	SHA256     string
	At         time.Time // a Resource Dump package: its snapshot interval
	Completed  time.Time
	From       time.Time // a Change Dump package: the interval of its changes
	Until      time.Time
	Bitstreams int   // entries, deletions included
	Bytes      int64 // bitstream bytes, uncompressed
	Reused     bool  // taken from an interrupted earlier run
}

// Result sums up a Pack run.
type Result struct {
	Packages   []PackageInfo
	Bitstreams int
	Bytes      int64
	Skipped    int    // files left out (symlinks, special files, changed files)
	Document   string // the dump document; empty when a --changes run found no change
	DumpURL    string // the prefix of the packages' URLs in Document
	// A --changes run: the changes found, and the interval they cover
	// (Published.From, the baseline's time, to Until). A run that finds
	// none writes nothing and moves no time: the next run starts from the
	// same baseline.
	Created, Updated, Deleted int
	Elapsed                   time.Duration
	// Published is what the run published: the documents it created or
	// changed, in the order written, when Options.Channels has a hub; the
	// channels and Capability List, defaults filled in; its interval.
	layout.Published
	// Parts is what a worker of a claimed-parts run (Options.Parts) did,
	// and left; nil for other runs.
	Parts *PartsReport
}

// FileError is an error reading or packing one source file.
type FileError struct {
	Path string
	Err  error
}

func (e *FileError) Error() string { return fmt.Sprintf("%s: %v", e.Path, e.Err) }
func (e *FileError) Unwrap() error { return e.Err }

// SourceError is returned, before anything is written, when the source
// is not a directory that can be read.
type SourceError struct {
	Path string
	Err  error
}

func (e *SourceError) Error() string { return fmt.Sprintf("source %s: %v", e.Path, e.Err) }
func (e *SourceError) Unwrap() error { return e.Err }

// ErrSourceIsOutput is wrapped in a SourceError when the output directory
// is the source directory itself (after resolving symbolic links).
var ErrSourceIsOutput = errors.New("is also the output directory: the output must be outside the source or in a directory of it, which the dump leaves out")

// ErrChanged is wrapped in a FileError when a file's size or modification
// time differ after it was read.
var ErrChanged = fmt.Errorf("file changed while it was read")
