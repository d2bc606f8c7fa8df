package unpack

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/rsdump/rsdump/deststate"
	"github.com/rsdump/rsdump/finding"
	"github.com/rsdump/rsdump/internal/claim"
	"github.com/rsdump/rsdump/internal/sink"
	"github.com/rsdump/rsdump/pkgread"
	"github.com/rsdump/rsdump/resourcesync"
)

// A sharded restore: N workers, on as many machines, restore one Resource
// Dump into one shared tree, each claiming whole packages one at a time
// (internal/claim, as pack's workers claim parts) until none is left;
// then MergeShards makes the tree an ordinary Destination.
//
// What one process does before any package (unpack.go's resourceDump)
// is done once, by the worker that claims the plan: the tree is not
// moved back in time, a first restore into a tree holding files at the
// bitstreams' names refuses, and the survey of every package's manifest
// finds the targets two packages carry with different content. The
// clashes it finds go into the plan, which every worker reads: a package
// is then refused exactly the targets it would be refused in one
// process, whichever worker restores it.
//
// The workers hold the tree's lock shared (deststate), stage in their own
// directories and write their own written logs, which every run reads;
// none saves the state. MergeShards, under the tree's own lock (so once
// every worker has ended), checks every package was restored, moves the
// workers' logs into the tree's and records the state: a later sync or
// unpack of Change Dumps continues from it.

// ShardOptions make a run one worker of a sharded restore.
type ShardOptions struct {
	K, N int // this worker, when known: its claims start at package (K-1)*M/N
	// Worker names the worker in its claims ("slurm task 3 of 4 (job
	// 812)"); the name of its written log is made from K, the host and the
	// process.
	Worker string
	Lease  time.Duration // how long a claim holds without renewal; default 5 minutes
}

// ShardsReport is what a worker of a sharded restore did, and left.
type ShardsReport struct {
	Packages int      `json:"packages"` // in the dump
	Planned  bool     `json:"planned"`  // this worker planned the restore
	Restored []string `json:"restored"` // packages this worker restored
	Done     int      `json:"done"`     // packages restored by any worker
	Held     []string `json:"held,omitempty"`
	Left     []string `json:"left,omitempty"`
}

// PackageClaimed is the event of a package a worker claimed.
type PackageClaimed struct {
	Package string
	From    string // the claim taken over, or ""
}

// Where a sharded restore keeps its plan and claims, in the tree's
// deststate.ShardsDir.
const (
	restorePlanName = "plan.json"
	restoreClaims   = "claims/"
	restorePlanJob  = "plan"
)

// restorePlan is the plan every worker follows.
type restorePlan struct {
	Version  int       `json:"version"`
	Source   string    `json:"source"` // the dump, as its planner was given it
	At       time.Time `json:"at"`
	Packages int       `json:"packages"`
	// List identifies the dump's packages whatever path each worker reads
	// it from: a hash of their <loc>s, lengths and hashes, in order.
	List    string      `json:"list"`
	Clashes []planClash `json:"clashes,omitempty"`
	Planner string      `json:"planner"`
	Planned time.Time   `json:"planned"`
	clashes map[entryRef]pkgread.Clash
}

type planClash struct {
	Pkg, N int
	Clash  pkgread.Clash
}

// maxPlanClashes bounds the clashes a plan carries (it is read whole by
// every worker): a dump with more is restored in one process.
const maxPlanClashes = 100000

// listKey identifies a dump's packages (restorePlan.List).
func listKey(d *pkgread.Dump) string {
	h := sha256.New()
	for _, r := range d.Packages {
		fmt.Fprintf(h, "%s\x00%d\x00%v\x00", r.Entry.Loc, r.Length, r.Want)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Work is one worker of a sharded restore of source, a Resource Dump,
// into dir (see above): it claims the dump's packages one at a time
// (opts.Jobs at once) and restores each whole, until none is left.
// Result.Shards says what it did and left. opts.Shard must be set.
func Work(ctx context.Context, source, dir string, opts Options) (*Result, error) {
	if err := checkShardOptions(opts); err != nil {
		return nil, err
	}
	opts.Command = cmp.Or(opts.Command, "unpack --shard")
	u, d, board, store, err := startSharded(ctx, source, dir, opts)
	if err != nil {
		return nil, err
	}
	defer u.dest.close()
	rep := &ShardsReport{Packages: len(d.Packages)}
	pl, err := u.getRestorePlan(ctx, board, store, d, rep)
	if err != nil {
		return nil, err
	}
	if err := u.restoreShards(ctx, board, d, pl, rep); err != nil {
		return nil, err
	}
	res := u.result()
	res.Shards = rep
	return res, nil
}

func checkShardOptions(o Options) error {
	switch {
	case o.Shard == nil:
		return errors.New("unpack: a sharded restore needs ShardOptions")
	case o.DryRun || len(o.Only) > 0 || o.Rollback || o.Dir != nil:
		return errors.New("a sharded restore is not a dry run, an --only or a --rollback: run those in one process")
	}
	return nil
}

// workerName is the worker's written log's name (deststate.Options.Worker):
// unique to the process, so that two processes never append to one log.
func workerName(s *ShardOptions) string {
	host, _ := os.Hostname()
	host = strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' {
			return r
		}
		return '_'
	}, host)
	return fmt.Sprintf("k%d-%s-%d", s.K, cmp.Or(host, "host"), os.Getpid())
}

// startSharded opens dir for a worker or the merge of a sharded restore
// of source: the tree, the dump, the board and the store of the claims.
// The caller closes u.dest.
func startSharded(ctx context.Context, source, dir string, opts Options) (*unpacker, *pkgread.Dump, *claim.Board, *sink.Dir, error) {
	u, err := start(dir, opts)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	d, err := u.loadSharded(ctx, source)
	if err == nil {
		var board *claim.Board
		var store *sink.Dir
		if board, store, err = u.board(); err == nil {
			return u, d, board, store, nil
		}
	}
	u.dest.close()
	return nil, nil, nil, nil, err
}

// loadSharded reads the dump a sharded restore or its merge applies: a
// Resource Dump, with at least one package.
func (u *unpacker) loadSharded(ctx context.Context, source string) (*pkgread.Dump, error) {
	if fi, err := os.Stat(source); err == nil && fi.IsDir() || pkgread.IsZip(source) {
		return nil, fmt.Errorf("%s: a sharded restore takes a dump document (resourcedump.xml), not a directory or a package", source)
	}
	d, err := pkgread.LoadDump(ctx, u.opts.Client, source, u.rep)
	if err != nil {
		return nil, err
	}
	if d.Capability != resourcesync.CapResourceDump {
		return nil, fmt.Errorf("%s: a sharded restore applies a Resource Dump; Change Dumps apply in order, in one process", source)
	}
	return d, nil
}

// board is the tree's claims of a sharded restore, and the store that
// holds them and the plan.
func (u *unpacker) board() (*claim.Board, *sink.Dir, error) {
	store, err := sink.OpenDir(filepath.Join(u.dest.dir, deststate.DirName, deststate.ShardsDir))
	if err != nil {
		return nil, nil, err
	}
	b := &claim.Board{Store: store, Dir: restoreClaims}
	if s := u.opts.Shard; s != nil {
		b.Worker, b.Lease = s.Worker, s.Lease
	}
	return b, store, nil
}

// getRestorePlan reads the plan, or makes it when no worker has: the
// others wait for it, and take the job over if its lease passes first.
func (u *unpacker) getRestorePlan(ctx context.Context, board *claim.Board, store *sink.Dir, d *pkgread.Dump, rep *ShardsReport) (*restorePlan, error) {
	pl, err := claim.Once(ctx, board, restorePlanJob, func() (*restorePlan, error) { return readRestorePlan(store) },
		func(pl *restorePlan) error { return checkRestorePlan(store, pl, d, nil) },
		func(ctx context.Context, h *claim.Held) (*restorePlan, error) {
			rep.Planned = true
			return u.makeRestorePlan(ctx, h, store, d)
		})
	if errors.Is(err, claim.ErrGone) {
		return nil, fmt.Errorf("%s: the restore was planned, and the plan is gone: remove %s to restore again", store.Loc(restorePlanName), store.Loc(restoreClaims))
	}
	return pl, err
}

func readRestorePlan(store *sink.Dir) (*restorePlan, error) {
	b, err := sink.ReadFile(context.Background(), store, restorePlanName, 256<<20)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var pl restorePlan
	if err := json.Unmarshal(b, &pl); err != nil || pl.Version != 1 {
		return nil, fmt.Errorf("%s: not a plan of a sharded restore rsdump wrote (%v)", store.Loc(restorePlanName), err)
	}
	pl.clashes = map[entryRef]pkgread.Clash{}
	for _, c := range pl.Clashes {
		pl.clashes[entryRef{c.Pkg, c.N}] = c.Clash
	}
	return &pl, nil
}

// checkRestorePlan refuses a plan of another dump.
func checkRestorePlan(store *sink.Dir, pl *restorePlan, d *pkgread.Dump, err error) error {
	if err != nil {
		return err
	}
	if pl.List != listKey(d) {
		return fmt.Errorf("%s: the tree is being restored from another dump (%s, at %s): finish that one and merge it, or remove %s", d.Source, pl.Source, resourcesync.FormatTime(pl.At), store.Loc(""))
	}
	return nil
}

// makeRestorePlan does, under the plan job's claim, what one process
// does before its first package, and writes the plan.
func (u *unpacker) makeRestorePlan(ctx context.Context, h *claim.Held, store *sink.Dir, d *pkgread.Dump) (*restorePlan, error) {
	if err := u.checkSnapshot(d.Source, d.Header.MD.At); err != nil {
		return nil, err
	}
	if err := u.guardFresh(ctx, d.Packages, nil); err != nil {
		return nil, err
	}
	u.noSpool = true // the workers stage from the packages' own manifests
	claims, _, done, err := u.survey(ctx, d.Packages)
	if err != nil {
		return nil, cmp.Or(context.Cause(ctx), err)
	}
	defer done()
	pl := &restorePlan{Version: 1, Source: d.Source, At: d.Header.MD.At, Packages: len(d.Packages), List: listKey(d),
		Planner: h.Record().String(), Planned: time.Now().UTC()}
	for i, c := range claims {
		if c.late != nil {
			return nil, fmt.Errorf("%s: its manifest could not be read before the restore (a remote package without a detached manifest?): a sharded restore needs every package's; restore it in one process", d.Packages[i].Loc)
		}
	}
	if len(claims) > 0 {
		for ref, c := range claims[0].clashes {
			pl.Clashes = append(pl.Clashes, planClash{ref.pkg, ref.n, c})
		}
	}
	if len(pl.Clashes) > maxPlanClashes {
		return nil, fmt.Errorf("%s: %s two packages carry with different content: restore it in one process", d.Source, finding.Plural(len(pl.Clashes), "target"))
	}
	b, err := json.Marshal(pl)
	if err != nil {
		return nil, err
	}
	err = store.WriteNew(ctx, restorePlanName, append(b, '\n'))
	if errors.Is(err, fs.ErrExist) {
		pl, err = readRestorePlan(store) // a worker that took the job over wrote first
		return pl, checkRestorePlan(store, pl, d, err)
	}
	if err != nil {
		return nil, err
	}
	pl, err = readRestorePlan(store)
	if err != nil {
		return nil, err
	}
	return pl, h.Done(context.WithoutCancel(ctx))
}

// pkgJob names package i (from 0) of m on the board.
func pkgJob(i, m int) string { return fmt.Sprintf("pkg%0*d", len(strconv.Itoa(m)), i+1) }

func jobPkg(job string) int {
	n, _ := strconv.Atoi(strings.TrimPrefix(job, "pkg"))
	return n - 1
}

// restoreShards claims packages and restores each whole. A package that is
// not restored without a problem is given up, for a rerun to try again;
// the worker goes on with the others.
func (u *unpacker) restoreShards(ctx context.Context, board *claim.Board, d *pkgread.Dump, pl *restorePlan, rep *ShardsReport) error {
	m := len(d.Packages)
	jobs := make([]string, m)
	for i := range jobs {
		jobs[i] = pkgJob(i, m)
	}
	s := u.opts.Shard
	wo := claim.WorkOptions{Parallel: u.opts.Jobs, KeepGoing: true, Claimed: func(h *claim.Held) {
		from := ""
		if h.From != nil {
			from = h.From.String()
		}
		finding.Send(u.opts.Events, PackageClaimed{Package: d.Packages[jobPkg(h.Record().Job)].Loc, From: from})
	}}
	if s.N > 0 && s.K > 0 {
		wo.Start = (s.K - 1) * m / s.N
	}
	var restored []string
	wrep, err := board.Work(ctx, jobs, wo, func(ctx context.Context, h *claim.Held) error {
		i := jobPkg(h.Record().Job)
		ref := d.Packages[i]
		pkgread.Announce([]pkgread.PackageRef{ref}, u.opts.Events)
		out, err := u.unpackPackage(ctx, ref, claimed{clashes: pl.clashes, pkg: i, resumed: h.From != nil})
		switch {
		case err != nil:
			return err
		case !out.ok:
			return fmt.Errorf("%s: not restored whole (%s)", ref.Loc, finding.Plural(out.counts.Problems(), "problem"))
		}
		u.mu.Lock()
		restored = append(restored, ref.Loc)
		u.mu.Unlock()
		return nil
	})
	rep.Restored = restored
	if wrep != nil {
		rep.Done = wrep.Done
		rep.Held, rep.Left = wrep.Describe(func(job string) string { return d.Packages[jobPkg(job)].Loc })
	}
	return err
}

// MergeShards ends a sharded restore of source into dir, once every
// worker has ended (it takes the tree's own lock): it checks that every
// package was restored, naming those that were not and why, moves the
// workers' written logs into the tree's, records the state (the dump's
// at), and removes the plan and the claims. The tree is then an ordinary
// Destination.
func MergeShards(ctx context.Context, source, dir string, opts Options) (*Result, error) {
	opts.Shard = nil
	if err := checkShardOptions(Options{Shard: &ShardOptions{}, DryRun: opts.DryRun, Only: opts.Only, Rollback: opts.Rollback, Dir: opts.Dir}); err != nil {
		return nil, err
	}
	opts.Command = cmp.Or(opts.Command, "unpack --merge")
	u, d, board, store, err := startSharded(ctx, source, dir, opts)
	if err != nil {
		return nil, err
	}
	defer u.dest.close()
	pl, err := readRestorePlan(store)
	if err == nil && pl == nil {
		err = fmt.Errorf("%s: no sharded restore in %s (no %s)", source, u.dest.dir, store.Loc(restorePlanName))
	}
	if err = checkRestorePlan(store, pl, d, err); err != nil {
		return nil, err
	}
	if err := checkRestored(ctx, board, d); err != nil {
		return nil, err
	}
	n, err := u.dest.st.MergeLogs()
	if err != nil {
		return nil, err
	}
	s := u.state()
	s.Pending, s.ResourceDumpAt, s.ChangeDumpUntil, s.Source = false, d.Header.MD.At, time.Time{}, d.Source
	if err := u.saveState(s); err != nil {
		return nil, err
	}
	if err := board.Clear(ctx); err != nil {
		return nil, err
	}
	if err := store.Remove(ctx, restorePlanName); err != nil {
		return nil, err
	}
	os.Remove(store.Loc(""))
	res := u.result()
	res.Packages = len(d.Packages)
	res.Merged = n
	return res, nil
}

// ShardsError is a merge refused because packages were not restored.
type ShardsError struct {
	Packages int      // in the dump
	NotDone  []string // each package not restored, and why
}

func (e *ShardsError) Error() string {
	list := strings.Join(e.NotDone[:min(len(e.NotDone), 5)], "; ")
	if len(e.NotDone) > 5 {
		list += fmt.Sprintf("; and %d more", len(e.NotDone)-5)
	}
	return fmt.Sprintf("merge: %s of %d not restored: %s; run a worker again to restore what is unclaimed or left", finding.Plural(len(e.NotDone), "package"), e.Packages, list)
}

// checkRestored refuses while a package is not done: unclaimed, held, or
// left by a worker that stopped or gave it up.
func checkRestored(ctx context.Context, board *claim.Board, d *pkgread.Dump) error {
	all, err := board.Look(ctx)
	if err != nil {
		return err
	}
	e := &ShardsError{Packages: len(d.Packages)}
	for i, ref := range d.Packages {
		st := all[pkgJob(i, len(d.Packages))]
		if st != nil && st.Done {
			continue
		}
		why, err := board.NotDone(ctx, st)
		if err != nil {
			return err
		}
		e.NotDone = append(e.NotDone, fmt.Sprintf("%s (%s)", ref.Loc, why))
	}
	if len(e.NotDone) > 0 {
		return e
	}
	return nil
}
