package unpack

import (
	"context"

	"github.com/rsdump/rsdump/deststate"
)

// RepairRecords restores the files of recs, records of the written log
// whose files a check found missing or damaged (rsdump audit's), as
// Repair restores those its own check finds, and checks no other file:
// each is fetched from a package of ro's dumps that carries exactly the
// version rsdump wrote, reading only that bitstream's bytes, or from its
// URI when only a list names it. A path may appear once in recs. What no
// document carries is left in Unrepaired.
func RepairRecords(ctx context.Context, dir string, recs []deststate.Record, ro RepairOptions, opts Options) (*RepairResult, error) {
	u, err := start(dir, opts)
	if err != nil {
		return nil, err
	}
	defer u.dest.close()
	res := &RepairResult{Checked: len(recs), Damaged: len(recs)}
	for len(recs) > 0 {
		n := min(len(recs), repairBatch)
		damaged := make(map[string]deststate.Record, n)
		for _, rec := range recs[:n] {
			damaged[rec.Path] = rec
		}
		if err := u.restore(ctx, damaged, ro, res); err != nil {
			return nil, err
		}
		recs = recs[n:]
	}
	s := u.state()
	s.Pending = false
	if err := u.finishState(s); err != nil {
		return nil, err
	}
	res.Result = *u.result()
	return res, nil
}
