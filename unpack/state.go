package unpack

import (
	"fmt"
	"path/filepath"
	"time"

	"github.com/rsdump/rsdump/deststate"
)

// state is the tree's state as the run has left it so far.
func (u *unpacker) state() deststate.State { return u.dest.st.State() }

// saveState records s; a dry run only follows it (deststate.Dir.Save).
func (u *unpacker) saveState(s deststate.State) error { return u.dest.st.Save(s) }

// recordSnapshot records in dir's state that every package of a Resource
// Dump taken at `at` is applied, as unpacking its document does.
func recordSnapshot(dir string, opts Options, at time.Time) error {
	d := opts.Dir
	if d == nil {
		var err error
		if d, err = deststate.Open(dir, deststate.Options{Command: command(opts), KeepCache: true}); err != nil {
			return err
		}
		defer d.Close()
	}
	return d.Update(func(s *deststate.State) {
		s.ResourceDumpAt, s.ChangeDumpUntil, s.Pending = at, time.Time{}, false
	})
}

// command names the run in the tree's lock.
func command(opts Options) string {
	if opts.Command != "" {
		return opts.Command
	}
	return "unpack"
}

// checkDir refuses an open tree given for another directory than dir.
func checkDir(d *deststate.Dir, dir string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	if abs != d.Path() {
		return fmt.Errorf("unpack into %s with the tree %s open: give one directory", abs, d.Path())
	}
	return nil
}
