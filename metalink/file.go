package metalink

import (
	"io"

	"github.com/rsdump/rsdump/internal/atomic"
)

// WriteFile writes a document to path through write, atomically: under a
// temporary name in the same directory, synced, renamed over path and the
// directory synced only when write succeeds. On failure path is left as it
// was and the temporary file is removed. The file is mode 0644, so that a
// web server can serve it.
func WriteFile(path string, write func(io.Writer) error) error {
	f, err := atomic.Create(path, 0o644)
	if err != nil {
		return err
	}
	defer f.Abort() // does nothing after Commit
	if err := write(f); err != nil {
		return err
	}
	return f.Commit()
}
