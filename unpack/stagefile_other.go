//go:build !linux

package unpack

import (
	"os"
	"time"
)

// createFile creates a staging file.
func (s *stage) createFile(name string) (stagedFile, error) {
	f, err := s.root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, err
	}
	return osStaged{f}, nil
}

// chtimes sets a staged file's times.
func (s *stage) chtimes(name string, t time.Time) error { return s.root.Chtimes(name, t, t) }

// osStaged is a staging file as an *os.File, which the syncer fsyncs.
type osStaged struct{ *os.File }

func (f osStaged) osFile() *os.File { return f.File }
