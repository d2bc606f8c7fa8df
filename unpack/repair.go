package unpack

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync/atomic"

	"github.com/rsdump/rsdump/deststate"
	"github.com/rsdump/rsdump/finding"
	"github.com/rsdump/rsdump/internal/digest"
	"github.com/rsdump/rsdump/internal/httpc"
	"github.com/rsdump/rsdump/pkgread"
)

// CheckRepaired is a file rsdump wrote that differed or was missing, and
// was restored; CheckDamaged one it could not restore.
const (
	CheckRepaired = "repaired"
	CheckDamaged  = "damaged"
)

// RepairOptions say where a repair looks for the versions rsdump wrote.
type RepairOptions struct {
	// Dumps are the Source's dump documents: Change Dumps first, whose
	// packages are searched newest first, then Resource Dumps.
	Dumps []string
	// Lists are its Resource List and Change List: a resource no package
	// carries is fetched from its URI when a list names it with the
	// version rsdump wrote.
	Lists []string
	// HashAll hashes every file rsdump owns; by default only a file whose
	// length or mtime is not what rsdump gave it is read.
	HashAll bool
}

// RepairResult says what Repair found and did.
type RepairResult struct {
	Result
	Checked  int   `json:"checked"`  // files rsdump owns, checked
	Damaged  int   `json:"damaged"`  // of them, missing or not as rsdump wrote them
	Repaired int   `json:"repaired"` // restored
	Fetched  int64 `json:"fetched"`  // bytes fetched: documents, manifests, packages' ranges, resources
	// Unrepaired are the records of damaged files whose version no
	// document names: changes applied next may replace them; what is
	// left is reported by Unrepaired.
	Unrepaired []deststate.Record `json:"-"`
}

// repairBatch is how many damaged files are held at once: their records,
// and the packages' entries that carry them.
var repairBatch = 50000

// Repair checks the tree against its written log, the files rsdump wrote
// and owns: one that is missing, whose length differs, or whose mtime is
// not the one rsdump gave it and whose hashes then differ, is damaged.
// Each damaged file is restored from a package of the Source's dumps that
// carries exactly the version rsdump wrote (the same hashes), reading
// only that bitstream's bytes from inside the package (its central
// directory found by ranges, the entry read and checked), from any of the
// package's mirrors; or, when no package carries it, from its URI, as a
// list names it. A restored file lands as any bitstream does: staged,
// verified against the written log's hashes, renamed. A file whose
// content is right but mtime not is given its mtime back.
func Repair(ctx context.Context, dir string, ro RepairOptions, opts Options) (*RepairResult, error) {
	u, err := start(dir, opts)
	if err != nil {
		return nil, err
	}
	defer u.dest.close()
	res := &RepairResult{}
	var fetched atomic.Int64
	ctx = httpc.WithCount(ctx, &fetched)
	damaged := map[string]deststate.Record{}
	flush := func() error {
		err := u.restore(ctx, damaged, ro, res)
		clear(damaged)
		return err
	}
	err = u.check(ctx, ro.HashAll, res, func(rec deststate.Record) error {
		damaged[rec.Path] = rec
		if len(damaged) >= repairBatch {
			return flush()
		}
		return nil
	})
	if err == nil {
		err = flush()
	}
	if err == nil {
		s := u.state()
		s.Pending = false
		err = u.finishState(s)
	}
	if err != nil {
		return nil, err
	}
	res.Result = *u.result()
	res.Fetched = fetched.Load()
	return res, nil
}

// check hands fn the record of every file rsdump owns that is damaged,
// compacting the written log when it is mostly superseded records.
func (u *unpacker) check(ctx context.Context, hashAll bool, res *RepairResult, fn func(deststate.Record) error) error {
	if u.dest.root == nil {
		return nil
	}
	st, err := u.dest.st.Owned(ctx, u.scratchDir(), func(rec deststate.Record) error {
		res.Checked++
		bad, err := u.differs(rec, hashAll)
		if err != nil || !bad {
			return err
		}
		res.Damaged++
		return fn(rec)
	})
	if err != nil {
		return err
	}
	if st.Worth() && !u.opts.DryRun {
		return u.dest.st.Compact(ctx, u.scratchDir())
	}
	return nil
}

// differs says whether the file rec describes is not as rsdump wrote it
// (CheckFile): its length and mtime are compared first; its hashes are
// read when the mtime differs (whole seconds: some file systems keep no
// more), or always with hashAll. A file that cannot be read is damaged,
// to be restored as a missing one is. A file whose content is right gets
// its mtime back.
func (u *unpacker) differs(rec deststate.Record, hashAll bool) (bool, error) {
	c, err := CheckFile(u.dest.root, rec, hashAll, nil)
	if err != nil {
		return false, fmt.Errorf("%s: %w", u.dest.dir, err)
	}
	if c.Problem != "" {
		return true, nil
	}
	if c.Hashed && !c.TimeOK && !u.opts.DryRun {
		// Not marked pending first, unlike every other change: the mtime
		// put back is the one the written log records, so a crash here
		// leaves nothing a next run could misread.
		u.dest.root.Chtimes(rec.Path, rec.Mtime, rec.Mtime)
	}
	return false, nil
}

// restore finds where each damaged file's version is and restores it;
// the rest become res.Unrepaired.
func (u *unpacker) restore(ctx context.Context, damaged map[string]deststate.Record, ro RepairOptions, res *RepairResult) error {
	if len(damaged) == 0 {
		return nil
	}
	groups, err := u.locate(ctx, damaged, ro)
	if err != nil {
		return err
	}
	located := map[string]bool{}
	for _, g := range groups {
		for _, b := range g.picks {
			t, _ := u.opts.Mapper.Target(b.URL)
			located[t] = true
		}
	}
	for _, g := range groups {
		n, err := u.applyPicks(ctx, g)
		res.Repaired += n
		if err != nil {
			return err
		}
	}
	for _, path := range slices.Sorted(maps.Keys(damaged)) {
		if rec := damaged[path]; !u.repaired(rec, located[path]) {
			res.Unrepaired = append(res.Unrepaired, rec)
		}
	}
	return nil
}

// repaired says whether the file of rec is now the version it records; in
// a dry run, whether a document names that version.
func (u *unpacker) repaired(rec deststate.Record, located bool) bool {
	if u.opts.DryRun || !located {
		return located
	}
	bad, err := u.differs(rec, true)
	return err == nil && !bad
}

// Unrepaired reports, as errors, the files of recs still not as rsdump
// wrote them: the changes applied after a repair replace some of the
// damaged files it found no version of, and the others are lost until
// the Source publishes them again.
func Unrepaired(ctx context.Context, dir string, recs []deststate.Record, opts Options) (int, error) {
	if len(recs) == 0 {
		return 0, nil
	}
	u, err := start(dir, opts)
	if err != nil {
		return 0, err
	}
	defer u.dest.close()
	want := map[string]bool{}
	for _, r := range recs {
		want[r.Path] = true
	}
	now, err := u.dest.st.Lookup(want)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, r := range recs {
		cur, ok := now[r.Path]
		if !ok || cur.Deleted() || cur.Hash != r.Hash || cur.Length != r.Length {
			continue // a change since replaced or deleted it
		}
		if bad, err := u.differs(cur, true); err != nil || !bad {
			continue
		}
		n++
		u.rep.Report(finding.Finding{Severity: finding.Error, Code: CheckDamaged, Source: u.dest.dir, Path: r.Path,
			Expected: pkgread.Describe(r.Length, mustParse(r.Hash)),
			Msg:      "missing or damaged, and no dump or list of the Source carries the version rsdump wrote: not repaired"})
	}
	return n, nil
}

func mustParse(h string) digest.Set {
	s, _ := digest.Parse(h)
	return s
}

// sameVersion says whether entry b is the version rec records: the same
// length, when both give one, and no hash both give differing, at least
// one agreeing.
func sameVersion(rec deststate.Record, b *pkgread.Bitstream) bool {
	if b.Deleted() || b.Length >= 0 && b.Length != rec.Length {
		return false
	}
	want, err := digest.Parse(rec.Hash)
	if err != nil {
		return false
	}
	ok, bad, _ := digest.Check(want, b.Want)
	return len(ok) > 0 && len(bad) == 0
}
