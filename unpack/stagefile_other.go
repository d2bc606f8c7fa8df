//go:build !linux

package unpack

import (
	"os"
	"path"
	"time"
)

// createFile creates a staging file in the directory h.
func createFile(h *dirHandle, base string) (stagedFile, error) {
	f, err := h.root.OpenFile(base, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, err
	}
	// The times are set through the stage's root, which stays open: h
	// may be closed before the file is sealed.
	return osStaged{f, h.tree, path.Join(h.path, base)}, nil
}

// osStaged is a staging file as an *os.File, which the syncer fsyncs.
type osStaged struct {
	*os.File
	stage *os.Root
	name  string
}

func (f osStaged) SetTimes(t time.Time) error { return f.stage.Chtimes(f.name, t, t) }

func (f osStaged) osFile() *os.File { return f.File }
