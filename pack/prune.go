package pack

import (
	"fmt"
	"os"
	"strings"

	"github.com/rsdump/rsdump/internal/sink"
	"github.com/rsdump/rsdump/layout"
	"github.com/rsdump/rsdump/sign"
)

// prune deals with the files of an earlier run that the new dump no
// longer names: packages past the new count, Metalinks the run did not
// write, index parts of a larger dump. Served beside the new dump they
// mislead, and a stale .meta4 describes bytes that are gone; but they may
// also be the last copy of an earlier dump (a wrong or unmounted source),
// so they are only removed with Options.Prune, and never when the new dump
// is empty. Otherwise they are reported. It runs once the new dump
// document is in place. Failures are warnings: the dump is complete.
func (r *run) prune() {
	keep, wrote := r.previous()
	if !wrote {
		return // nothing was written, and the dump is as it was
	}
	stale, err := r.stale(keep)
	if err != nil {
		r.warn(r.dir, "looking for files of an earlier run: "+err.Error())
		return
	}
	switch {
	case len(stale) == 0:
		return
	case !r.opts.Prune || len(r.pkgs) == 0:
		why := "remove them, or run with --prune"
		if r.opts.Prune {
			why = "not pruned: the new dump is empty"
		}
		list := strings.Join(stale[:min(3, len(stale))], ", ")
		if len(stale) > 3 {
			list += fmt.Sprintf(" and %d more", len(stale)-3)
		}
		r.warn(r.dir, fmt.Sprintf("left from an earlier run, not in the new dump: %s; %s", list, why))
		return
	}
	for _, name := range stale {
		if err := r.out.remove(name); err != nil {
			r.warn(name, "left from an earlier run, not removed: "+err.Error())
			continue
		}
		r.events(Removed{Name: name})
	}
	if r.out.dir != "" {
		syncDir(r.dir)
	}
}

// stale lists the files in the output directory named as pack names its
// files that the new dump does not name: not this run's, and not those
// of earlier runs that prev keeps.
func (r *run) stale(prev func(string) bool) ([]string, error) {
	keep := map[string]bool{}
	for _, p := range r.pkgs {
		keep[p.Name], keep[p.Manifest], keep[p.Metalink] = true, true, true
	}
	for i := range dumpParts(len(r.pkgs)) {
		keep[r.dumpKind().partName(i+1)] = true
	}
	for _, name := range r.list.files() {
		keep[name] = true
	}
	var stale []string
	err := r.topFiles(func(name string) {
		of := strings.TrimSuffix(name, sign.Suffix) // a signature goes with its document
		if r.ownsName(of) && !keep[of] && (prev == nil || !prev(of)) {
			stale = append(stale, name)
		}
	})
	return stale, err
}

// topFiles gives the names of the regular files at the top of the
// output, where pack's own are. A directory is read once, without a stat
// of each file: a --changes run's output holds four files a run, and the
// run's cost must not grow with them.
func (r *run) topFiles(fn func(name string)) error {
	if r.out.dir == "" {
		return r.out.List(r.out.ctx, "", func(fi sink.Info) error {
			if !strings.Contains(fi.Name, "/") { // List goes to every depth
				fn(fi.Name)
			}
			return nil
		})
	}
	es, err := os.ReadDir(r.out.dir)
	for _, e := range es {
		if e.Type().IsRegular() && !strings.HasPrefix(e.Name(), ".") {
			fn(e.Name())
		}
	}
	return err
}

// previous keeps the files of earlier runs the new documents name, and
// says whether the run wrote any; a run without a finisher (a test's) is
// a Resource Dump's.
func (r *run) previous() (func(string) bool, bool) {
	if r.end == nil {
		return nil, true
	}
	return r.end.previous(r)
}

// ownsName reports whether name is of the kind this run writes: a
// Resource Dump run leaves the files of Change Dumps alone, a Change
// Dump run those of the Resource Dump, and a shard those of the others.
func (r *run) ownsName(name string) bool {
	k := r.dumpKind()
	return layout.IsNumbered(name) && (strings.HasPrefix(name, k.prefix+"-") || k.list != "" && strings.HasPrefix(name, k.list+"-"))
}

func (r *run) dumpKind() *dumpKind {
	if r.kind == nil {
		return resourceDump
	}
	return r.kind
}
