package replica

import (
	"context"
	"errors"
	"fmt"

	"github.com/rsdump/rsdump/deststate"
	"github.com/rsdump/rsdump/resourcesync"
	"github.com/rsdump/rsdump/s3"
	"github.com/rsdump/rsdump/transfer"
	"github.com/rsdump/rsdump/unpack"
)

// repairSources are the Source's documents a repair looks in for the
// versions rsdump wrote: its Change Dump and Resource Dump, whose
// packages carry bitstreams, then its Resource List and Change List,
// which name resources at their URIs.
func repairSources(src *Source) unpack.RepairOptions {
	var ro unpack.RepairOptions
	for _, c := range []string{resourcesync.CapChangeDump, resourcesync.CapResourceDump} {
		if d := src.Docs[c]; d != "" {
			ro.Dumps = append(ro.Dumps, d)
		}
	}
	for _, c := range []string{resourcesync.CapResourceList, resourcesync.CapChangeList} {
		if d := src.Docs[c]; d != "" {
			ro.Lists = append(ro.Lists, d)
		}
	}
	return ro
}

// ErrNoSource is a tree whose state records no Source to repair from:
// one only ever unpacked, not synced.
var ErrNoSource = errors.New("records no Source (a tree rsdump sync keeps does)")

// RepairFiles restores the files of recs, records of d's written log
// whose files a check found missing or damaged (rsdump audit's), by the
// path sync's repair takes (unpack.RepairRecords): the Source d's state
// records is discovered again, as a sync without SOURCE finds it, and
// each file's version is fetched from inside a package of its dumps by
// byte ranges, or from its URI when only a list names it. d is held open
// (and locked) by the caller; only the files of recs are touched.
func RepairFiles(ctx context.Context, d *deststate.Dir, recs []deststate.Record, opts Options) (*unpack.RepairResult, error) {
	st := d.State()
	if st.Sync == nil {
		return nil, fmt.Errorf("%s %w", d.Path(), ErrNoSource)
	}
	if opts.Client == nil {
		opts.Client = transfer.NewClient(opts.Transfer)
	}
	// The Source and base URL the state records were given in the run
	// that recorded them, and so was their grant of S3.
	ctx = s3.Grant(ctx, st.Sync.Source, st.Sync.BaseURL)
	loc, err := resourcesync.ParseLocation(st.Sync.Source)
	if err != nil {
		return nil, fmt.Errorf("%s: the Source it records: %w", d.Path(), err)
	}
	src, err := Discover(ctx, opts.Client, loc)
	if err != nil {
		return nil, err
	}
	s := &syncer{opts: opts, dir: d.Path(), tree: d, src: src, base: st.Sync.BaseURL}
	o, err := s.unpackOptions()
	if err != nil {
		return nil, err
	}
	return unpack.RepairRecords(ctx, d.Path(), recs, repairSources(src), o)
}
