package audit

import (
	"io"
	"io/fs"

	"github.com/rsdump/rsdump/internal/atomic"
)

// File is a Recorder writing to a file: under a temporary name while the
// run goes, given its name when the run ends (internal/atomic), so that a
// run that could not complete leaves no half a record under the name.
type File struct {
	Recorder
	f *atomic.File
}

// CreateFile starts the record at path, which newRecorder (NewPREMIS,
// NewCSV) writes.
func CreateFile[R Recorder](path string, newRecorder func(io.Writer) R) (*File, error) {
	af, err := atomic.Create(path, fs.FileMode(0o644))
	if err != nil {
		return nil, err
	}
	return &File{Recorder: newRecorder(af), f: af}, nil
}

// End ends the record and gives the file its name.
func (f *File) End(s Summary) error {
	if err := f.Recorder.End(s); err != nil {
		f.Abort()
		return err
	}
	return f.f.Commit()
}

// Abort removes the file of a run that did not end; after End it does
// nothing.
func (f *File) Abort() { f.f.Abort() }
