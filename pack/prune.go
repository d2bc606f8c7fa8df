package pack

import (
	"os"
	"path/filepath"
	"regexp"

	"github.com/rsdump/rsdump/internal/sitemap"
)

// packNames matches the files pack writes in its output directory:
// packages, their detached manifests and Metalinks, and the parts of a
// dump index.
var packNames = regexp.MustCompile(`^resourcedump-(\d{5,}\.(zip|manifest\.xml|zip\.meta4)|part\d{5,}\.xml)$`)

// prune removes the files of an earlier run that the new dump no longer
// names: packages past the new count, Metalinks the run did not write,
// index parts of a larger dump. Left in place, they would be served beside
// the new dump, and a stale .meta4 describes bytes that are gone. It runs
// once the new dump document is in place, so that a crash before it
// leaves the old dump whole. Failures are warnings: the dump is complete.
func (r *run) prune() {
	keep := map[string]bool{}
	for _, p := range r.pkgs {
		keep[p.Name], keep[p.Manifest], keep[p.Metalink] = true, true, true
	}
	for i := 1; len(r.pkgs) > sitemap.MaxEntries && (i-1)*sitemap.MaxEntries < len(r.pkgs); i++ {
		keep[dumpPartName(i)] = true
	}
	entries, err := os.ReadDir(r.dir)
	if err != nil {
		r.warn(r.dir, "looking for files of an earlier run: "+err.Error())
		return
	}
	removed := false
	for _, e := range entries {
		if !e.Type().IsRegular() || !packNames.MatchString(e.Name()) || keep[e.Name()] {
			continue
		}
		if err := os.Remove(filepath.Join(r.dir, e.Name())); err != nil {
			r.warn(e.Name(), "left from an earlier run, not removed: "+err.Error())
			continue
		}
		removed = true
		r.events(Removed{Name: e.Name()})
	}
	if removed {
		syncDir(r.dir)
	}
}
