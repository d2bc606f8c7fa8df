package pack

import (
	"fmt"
	"os"
	"regexp"
	"strings"

	"github.com/rsdump/rsdump/internal/sink"
	"github.com/rsdump/rsdump/sign"
)

// packNames matches the numbered files pack writes in its output
// directory: packages, their detached manifests and Metalinks, and the
// parts of an index. A later, smaller run may leave some of these behind.
// Only regular files count: pack never writes a symlink, so one of these
// names is someone else's and is left alone.
var packNames = regexp.MustCompile(`^((resource|change)dump-((shard\d+of\d+-)?\d{5,}\.(zip|manifest\.xml|zip\.meta4)|part\d{5,}\.xml)|(resource|change)list-part\d{5,}\.xml)$`)

// docNames are the documents pack writes under fixed names.
var docNames = map[string]bool{
	DumpName: true, ChangeDumpName: true, ResourceListName: true, ChangeListName: true,
	CapabilityListName: true, SourceDescriptionName: true,
}

// IsOutput reports whether name, a slash-separated path relative to an
// output directory, is one pack writes there: packages, manifests,
// Metalinks, dump documents, lists, the Capability List and the Source
// Description, and the signature NAME.asc of each document (IsDocument).
// It is false for the journal, the state file and temporary files. A
// server of the directory uses it as its allowlist.
func IsOutput(name string) bool {
	if doc, ok := strings.CutSuffix(name, sign.Suffix); ok {
		return IsDocument(doc) // a document's signature
	}
	return docNames[name] || packNames.MatchString(name)
}

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
	return packNames.MatchString(name) && (strings.HasPrefix(name, k.prefix+"-") || k.list != "" && strings.HasPrefix(name, k.list+"-"))
}

func (r *run) dumpKind() *dumpKind {
	if r.kind == nil {
		return resourceDump
	}
	return r.kind
}
