package unpack

import (
	"context"
	"fmt"
	"path"
	"strconv"
	"strings"

	"github.com/rsdump/rsdump/finding"
	"github.com/rsdump/rsdump/pkgread"
	"github.com/rsdump/rsdump/resourcesync"
)

// CheckOnlyPatterns checks Options.Only's patterns, for a caller to
// refuse a bad one before any work.
func CheckOnlyPatterns(patterns []string) error {
	for _, p := range patterns {
		if _, err := path.Match(p, ""); err != nil {
			return fmt.Errorf("--only %q: %w", p, err)
		}
	}
	return nil
}

// only restores the bitstreams of a Resource Dump's packages that
// Options.Only picks, each package's read from inside it by ranges
// (applyPicks): its manifest comes from the detached copy, else from the
// package's central directory and manifest entry.
func (u *unpacker) only(ctx context.Context, doc, capability string, refs []pkgread.PackageRef) error {
	if capability == resourcesync.CapChangeDump {
		return fmt.Errorf("%s: --only restores part of a Resource Dump; a Change Dump's changes apply in order, whole", doc)
	}
	if err := CheckOnlyPatterns(u.opts.Only); err != nil {
		return err
	}
	if err := u.guardFresh(ctx, refs, u.picked); err != nil {
		return err
	}
	for _, ref := range refs {
		pkg, err := u.planManifest(ctx, ref, u.rep)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err != nil {
			u.openFailed(ctx, ref, u.rep, err)
			continue
		}
		if pkg == nil {
			continue // reported
		}
		g := &pickGroup{ref: ref, pkg: pkg}
		for _, b := range pkg.Bitstreams {
			if t, err := u.opts.Mapper.Target(b.URL); err == nil && b.Path != "" && b.Bad == "" && !b.Deleted() && u.picked(t) {
				g.picks = append(g.picks, b)
			}
		}
		u.onlyPicked += len(g.picks)
		if len(g.picks) == 0 {
			continue
		}
		u.count(func(r *Result) { r.Packages++ })
		if _, err := u.applyPicks(ctx, g); err != nil {
			return err
		}
	}
	s := u.state() // part of a snapshot: its time is not the tree's
	s.Pending = false
	return u.finishState(s)
}

// onlyMatchedNothing reports, as an error, Options.Only patterns that
// picked no bitstream of any package the run read: a typo, or a path
// given as the Source names it rather than as it lands in the tree. Not
// when a package could not be read: its bitstreams are not known.
func (u *unpacker) onlyMatchedNothing(sources []string) {
	if len(u.opts.Only) == 0 || u.onlyPicked > 0 || u.rep.Counts().Errors > 0 {
		return
	}
	u.rep.Report(finding.Finding{Severity: finding.Error, Code: CheckOnly, Source: strings.Join(sources, ", "),
		Msg: fmt.Sprintf("--only %s matched no file of the dump: nothing restored (a pattern matches a path in the tree, or a directory above it)", quoteAll(u.opts.Only))})
}

func quoteAll(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = strconv.Quote(s)
	}
	return strings.Join(q, ", ")
}

// picked says whether Options.Only picks target: a pattern matches it or
// a directory above it.
func (u *unpacker) picked(target string) bool {
	for _, p := range u.opts.Only {
		for t := target; t != "." && t != "/" && t != ""; t = path.Dir(t) {
			if ok, _ := path.Match(p, t); ok {
				return true
			}
		}
	}
	return false
}
