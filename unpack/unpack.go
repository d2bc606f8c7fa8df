// Package unpack is the Destination side of rsdump: it restores the
// bitstreams of Resource Dump and Change Dump packages into a directory,
// verifying every one, and never lets an unverified byte take a final
// name.
//
// Each bitstream streams from its package into a staging file inside the
// destination (DIR/.rsdump/tmp) while its CRC-32, length and hashes are
// computed; it is synced and renamed over its final name, with its mtime
// set from <lastmod>, only when all match. A package's bitstreams are all
// staged before any is committed, so that the package's own hash, when a
// dump document gives one, is checked before anything it carries lands.
// All file operations go through an os.Root on DIR.
package unpack

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/rsdump/rsdump/deststate"
	"github.com/rsdump/rsdump/finding"
	"github.com/rsdump/rsdump/pkgread"
	"github.com/rsdump/rsdump/resourcesync"
	"github.com/rsdump/rsdump/transfer"
	"github.com/rsdump/rsdump/transfer/pkgfetch"
)

// Options configure Unpack.
type Options struct {
	// Mapper says where each bitstream lands (deststate.Mapper, which Audit
	// shares).
	Mapper deststate.Mapper
	// AtomicPackage commits nothing from a package unless every
	// bitstream in it verified: the D-Lib all-or-nothing rule.
	AtomicPackage bool
	// DryRun reads the manifests and the tree and reports what would
	// change, writing nothing. Bitstreams are not read.
	DryRun bool
	// AllowGap applies a Change Dump package that starts after the last
	// change the tree's state records, or a Change Dump to a tree with no
	// baseline, reporting a warning instead of an error. The changes in
	// the gap are missing from the tree; the state moves past them.
	AllowGap bool
	pkgread.Limits
	Jobs   int          // Resource Dump packages unpacked at once; default GOMAXPROCS
	Client *http.Client // for documents read over HTTP; default transfer.NewClient(Transfer)
	// Transfer tunes the engine that fetches remote packages from all
	// their mirrors; its Client defaults to Client.
	Transfer transfer.Options
	// ResumeDownloads keeps a remote package's partial download in
	// DIR/.rsdump/cache when a run stops, and continues it in the next
	// run through the engine's resume state, rather than starting over.
	ResumeDownloads bool
	// Fetches is how many resources ApplyList fetches at once, each on
	// a connection of its own over HTTP/1.1; once a server answers over
	// HTTP/2, where requests are streams sharing a connection, 8 times
	// as many. Default 8.
	Fetches int
	// MaxResourceSize is the most ApplyList takes of a resource whose
	// entry gives no length; default DefaultMaxResourceSize.
	MaxResourceSize int64

	// Events receives every finding (a finding.Finding, with verify's
	// checks, one call at a time) and the progress of the run, from
	// several goroutines at once: finding.Planned, bytes added to the work
	// ahead (the packages' lengths, known from the dump document or the
	// file system before any package is read, later the size of a
	// package that only opening it tells, a list's resources to fetch),
	// and finding.Progress, bytes done, which add up to Planned's when the
	// run is complete.
	Events func(finding.Event)

	// Only restores the bitstreams whose target, or a directory above
	// it, matches one of these patterns (path.Match), each read from
	// inside its package by ranges: a subset of a remote dump without its
	// whole packages. The state is not changed: the tree holds part of a
	// snapshot.
	Only []string
	// Rollback applies a snapshot (a Resource Dump, a Resource List, a
	// package of one) older than what the tree holds, which is otherwise
	// refused (RollbackError): a whole snapshot then replaces the tree's
	// later state, every file rsdump wrote that it does not hold removed,
	// and the state records it.
	Rollback bool
	// Rebase makes a Resource Dump or Resource List applied to a tree
	// rsdump has written in (a snapshot newer than the tree's, or one an
	// earlier run applied in part) bring the tree to exactly that
	// snapshot, incrementally: each bitstream is planned from the
	// manifests (or the list) and the written log, and only those whose
	// file is not the entry's version are fetched, from inside their
	// packages by byte ranges (a package most of whose bytes differ is
	// fetched whole); the files rsdump wrote that the snapshot does not
	// hold are removed, before anything is written when every target is
	// known up front, so that a directory can become a file and a file a
	// directory in one run. The state records the snapshot as unfinished
	// until it is applied whole (deststate.Unfinished). rsdump sync sets
	// it.
	Rebase bool
	// Adopt takes, in a tree rsdump has never written in (no state), the
	// files that already hold their bitstream as rsdump's: they are
	// recorded as written. Without it such a run refuses before anything
	// lands when a bitstream's name is taken (ForeignError). A file that
	// holds something else is refused, unless Overwrite.
	Adopt bool
	// Overwrite replaces files rsdump did not write; it implies Adopt.
	Overwrite bool

	// Dir is the tree, already open (deststate.Open) by a caller that
	// runs several steps under one lock (rsdump sync): the run uses it,
	// and its dry-run setting, and leaves it open. Without it the run
	// opens dir itself, naming itself Command ("unpack") in the lock.
	Dir     *deststate.Dir
	Command string

	// Shard makes the run one worker of a sharded restore (Work); nil
	// for a run of its own.
	Shard *ShardOptions
}

// Result sums up a run.
type Result struct {
	Packages int   `json:"packages"`
	Written  int   `json:"written"`
	Present  int   `json:"present"` // already in place, skipped
	Deleted  int   `json:"deleted"`
	Refused  int   `json:"refused"`
	Bytes    int64 `json:"bytes"` // of the files written (or, in a dry run, to be written)
	finding.Counts
	// Shards is what a worker of a sharded restore did and left (Work);
	// Merged the written-log records its merge moved (MergeShards).
	Shards *ShardsReport `json:"sharded,omitempty"`
	Merged int64         `json:"merged,omitempty"`
}

// The checks unpack adds to those of finding (the reader's and verify's).
const (
	CheckWritten  = "written"  // a bitstream committed
	CheckPresent  = "present"  // a bitstream already in place
	CheckDeleted  = "deleted"  // a file removed by a deleted change
	CheckRefused  = "refused"  // a bitstream not committed
	CheckTarget   = "target"   // a bitstream whose destination is unsafe or outside the base
	CheckConflict = "conflict" // a deletion of a file that is not the one rsdump wrote
	CheckSkipped  = "skipped"  // a package or change already applied
	CheckOnly     = "only"     // Options.Only's patterns matched no bitstream
)

// Unpack restores source, a package (.zip), a dump document or index (a
// file or an http(s) URL), or a directory holding a local copy of a dump,
// into dir. Problems with the source are findings; the error is for a
// source or destination that cannot be used at all, or a cancelled
// context.
func Unpack(ctx context.Context, source, dir string, opts Options) (*Result, error) {
	return UnpackAll(ctx, []string{source}, dir, opts)
}

// UnpackAll is Unpack of several sources in turn, into one dir.
func UnpackAll(ctx context.Context, sources []string, dir string, opts Options) (_ *Result, err error) {
	u, err := start(dir, opts)
	if err != nil {
		return nil, err
	}
	defer func() { u.dest.closeAfter(err) }()
	defer u.endRebase()
	if ctx, err = u.pinned(ctx); err != nil {
		return nil, err
	}
	for _, s := range sources {
		if err := u.run(ctx, s); err != nil {
			return nil, err
		}
	}
	u.onlyMatchedNothing(sources)
	u.reportUnfinished()
	return u.result(), nil
}

// start opens dir and its state for a run.
func start(dir string, opts Options) (*unpacker, error) {
	if opts.Jobs <= 0 {
		opts.Jobs = runtime.GOMAXPROCS(0)
	}
	if opts.Client == nil {
		opts.Client = transfer.NewClient(opts.Transfer)
	}
	if opts.Dir != nil {
		opts.DryRun = opts.Dir.DryRun()
	}
	opts.Adopt = opts.Adopt || opts.Overwrite
	d, err := openDest(dir, opts)
	if err != nil {
		return nil, err
	}
	u := newUnpacker(opts, d)
	u.resuming = u.state().Pending
	return u, nil
}

func newUnpacker(opts Options, d *dest) *unpacker {
	u := &unpacker{opts: opts, dest: d, rep: finding.NewReporter(opts.Events),
		remote: &pkgfetch.Remote{Transfer: opts.Transfer, Client: opts.Client},
		docs:   resourcesync.Opener{Client: opts.Client}}
	if !opts.DryRun {
		u.remote.TempDir = filepath.Join(d.dir, filepath.FromSlash(d.st.Cache()))
		u.remote.Resume = opts.ResumeDownloads
	}
	return u
}

type unpacker struct {
	opts Options
	dest *dest
	rep  *finding.Reporter
	// resuming is set when the last run was interrupted: files it
	// committed may lack their record in the written log.
	resuming   bool
	logMu      sync.Mutex          // appends to the written log
	commitMu   sync.Mutex          // packages staged at once commit one at a time
	marked     bool                // markPending has recorded this run as pending
	remote     *pkgfetch.Remote    // opens packages, fetching remote ones
	docs       resourcesync.Opener // opens documents and detached manifests, through the run's client
	spooled    atomic.Int64        // bytes of the survey's spools (spoolBudget)
	noSpool    bool                // the survey spools nothing: a sharded restore's plan
	rebase     *rebase             // set while a snapshot is made the tree exactly (Rebase, Rollback)
	signed     bool                // the run requires signatures (resourcesync.Trust): a list entry needs a hash
	onlyPicked int                 // bitstreams Options.Only picked (only)

	mu  sync.Mutex
	res Result
}

func (u *unpacker) count(f func(r *Result)) {
	u.mu.Lock()
	f(&u.res)
	u.mu.Unlock()
}

func (u *unpacker) result() *Result {
	u.mu.Lock()
	r := u.res
	u.mu.Unlock()
	r.Counts = u.rep.Counts()
	return &r
}

func (u *unpacker) run(ctx context.Context, source string) error {
	if fi, err := os.Stat(source); err == nil && fi.IsDir() {
		return u.directory(ctx, source)
	}
	if pkgread.IsZip(source) {
		return u.standalone(ctx, source)
	}
	var applied func(time.Time) bool
	if len(u.opts.Only) == 0 {
		// The parts of a Change Dump Index the tree has applied are not
		// read again: their packages would all be skipped.
		applied = func(until time.Time) bool { return !u.state().Applies(until) }
	}
	d, err := pkgread.LoadDumpAfter(ctx, u.opts.Client, source, u.rep, applied)
	if errors.Is(err, pkgread.ErrRejected) {
		return nil // reported
	}
	if err != nil {
		return err
	}
	if len(u.opts.Only) > 0 {
		return u.only(ctx, d.Source, d.Capability, d.Packages)
	}
	if d.Capability == resourcesync.CapChangeDump {
		return u.changeDump(ctx, d)
	}
	if err := u.checkSnapshot(d.Source, d.Header.MD.At); err != nil {
		return err
	}
	if err := u.guardFresh(ctx, d.Packages, nil); err != nil {
		return err
	}
	return u.resourceDump(ctx, d)
}

// directory unpacks a local copy of a dump, as rsdump get leaves one: its
// dump documents, Resource Dumps first, or with none its packages one by
// one. A package no document lists is not applied: it may be left over
// from an earlier, larger dump.
func (u *unpacker) directory(ctx context.Context, dir string) error {
	docs, zips, err := pkgread.ListDir(dir)
	if err != nil {
		return err
	}
	if len(docs) == 0 && len(zips) == 0 {
		return fmt.Errorf("%s: no dump document and no package", dir)
	}
	if len(docs) == 0 {
		docs = zips
	} else {
		u.reportUnlisted(ctx, docs, zips)
	}
	withChanges := hasChangeDump(ctx, docs)
	for _, d := range docs {
		if withChanges && u.skipSnapshot(ctx, d) {
			continue
		}
		if err := u.run(ctx, d); err != nil {
			return err
		}
	}
	return nil
}

func hasChangeDump(ctx context.Context, docs []string) bool {
	for _, d := range docs {
		if h, err := resourcesync.Peek(ctx, d); err == nil && h.MD.Capability == resourcesync.CapChangeDump {
			return true
		}
	}
	return false
}

// skipSnapshot says whether doc, in a directory that also holds a Change
// Dump, is a Resource Dump the tree already holds (or has moved past): it
// is not applied again, and only the changes after the tree's state are.
// Given on its own, a Resource Dump is always applied, to repair a tree.
func (u *unpacker) skipSnapshot(ctx context.Context, doc string) bool {
	h, err := resourcesync.Peek(ctx, doc)
	if err != nil || h.MD.Capability != resourcesync.CapResourceDump || !u.snapshotHeld(h.MD.At) {
		return false
	}
	u.rep.Report(finding.Finding{Severity: finding.OK, Code: CheckSkipped, Source: doc,
		Msg: fmt.Sprintf("Resource Dump at %s not applied: the tree already holds %s; only the changes after it apply", ftime(h.MD.At), u.state().Describe())})
	return true
}

// reportUnlisted warns of packages in the directory that no document
// lists.
func (u *unpacker) reportUnlisted(ctx context.Context, docs, zips []string) {
	listed := map[string]bool{}
	for _, d := range docs {
		if dump, err := pkgread.LoadDump(ctx, u.opts.Client, d, finding.NewReporter(nil)); err == nil {
			for _, p := range dump.Packages {
				listed[filepath.Clean(p.Loc)] = true
			}
		}
	}
	for _, z := range zips {
		if !listed[filepath.Clean(z)] {
			u.rep.Report(finding.Finding{Severity: finding.Warning, Code: CheckSkipped, Source: z, Msg: "package not listed by any dump document beside it; not applied"})
		}
	}
}

// standalone unpacks one package given without its dump document. The
// state is not changed for a Resource Dump package, which is only part of
// a snapshot; a Change Dump package advances it like one from a document.
func (u *unpacker) standalone(ctx context.Context, path string) error {
	if err := resourcesync.RefuseAlone(ctx, path); err != nil {
		return err
	}
	if !resourcesync.IsURL(path) {
		if _, err := os.Stat(path); err != nil {
			return err
		}
	}
	ref := pkgread.PackageRef{Loc: path, Length: -1}
	if len(u.opts.Only) > 0 {
		return u.only(ctx, path, resourcesync.CapResourceDump, []pkgread.PackageRef{ref})
	}
	if err := u.guardFresh(ctx, []pkgread.PackageRef{ref}, nil); err != nil {
		return err
	}
	pkgread.Announce([]pkgread.PackageRef{ref}, u.opts.Events)
	out, err := u.unpackPackage(ctx, ref, claimed{})
	if err != nil {
		return err
	}
	return u.standaloneState(out, path)
}

// standaloneState moves the state for a package unpacked without its dump
// document: back for a Resource Dump package applied with Rollback,
// forward for a Change Dump package applied without a problem.
func (u *unpacker) standaloneState(out outcome, path string) error {
	switch out.header.MD.Capability {
	case resourcesync.CapResourceDumpManifest:
		if !u.opts.Rollback || !out.ok {
			return nil // an older one was refused (trusted)
		}
		return u.rewind(out.header.MD.At)
	case resourcesync.CapChangeDumpManifest:
		if out.ok {
			return u.advance(out.header.MD.Until, out.lastChange, path)
		}
	}
	return nil
}

// rewind records that a snapshot package taken at `at` may have put files
// back to older versions: changes made since must apply again rather than
// be skipped as already applied. The state only ever moves back here; a
// tree with no state keeps none, since one package is not a whole
// snapshot. A package without at (resync writes none) rewinds to the start.
func (u *unpacker) rewind(at time.Time) error {
	since := u.state().Since()
	if since.IsZero() || !at.IsZero() && !at.Before(since) {
		return nil
	}
	s := u.state()
	s.ResourceDumpAt, s.ChangeDumpUntil = at, time.Time{}
	return u.saveState(s)
}

// resourceDump unpacks the packages in parallel. The state records the
// dump's at once every package has been applied without a problem.
func (u *unpacker) resourceDump(ctx context.Context, d *pkgread.Dump) error {
	claims, surveyed, done, err := u.survey(ctx, d.Packages)
	if err != nil {
		return err
	}
	defer done()
	hook(HookSurveyed, 0)
	if u.rebase != nil {
		return u.rebaseDump(ctx, d, claims, surveyed)
	}
	pkgread.Announce(d.Packages, u.opts.Events)
	allOK, err := u.applyAll(ctx, d, claims, u.unpackPackage)
	if err != nil {
		return err
	}
	s := u.state()
	s.Pending = false
	if allOK && u.rep.Counts().Problems() == 0 {
		s.ResourceDumpAt, s.ChangeDumpUntil, s.Source = d.Header.MD.At, time.Time{}, d.Source
		return u.saveState(s)
	}
	return u.finishState(s)
}

// finishState records the state a run ends with, once the run changed
// the tree (its first change marked it pending; see markPending): a run
// that changed nothing leaves state.json as it was. A snapshot applied
// whole is recorded even when every file was in place already (saveState
// in its place). A dry run follows it in any case.
func (u *unpacker) finishState(s deststate.State) error {
	if !u.opts.DryRun && !u.marked && !u.dest.st.Saved() {
		return nil
	}
	return u.saveState(s)
}

// applyAll applies each package of d with apply, u.opts.Jobs at once,
// and says whether every one applied without a problem; the first error
// stops the others.
func (u *unpacker) applyAll(ctx context.Context, d *pkgread.Dump, claims []claimed, apply func(context.Context, pkgread.PackageRef, claimed) (outcome, error)) (bool, error) {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(u.opts.Jobs)
	var failed atomic.Bool
	for i, ref := range d.Packages {
		g.Go(func() error {
			out, err := apply(gctx, ref, claims[i])
			if err == nil && !out.ok {
				failed.Store(true)
			}
			return err
		})
	}
	err := g.Wait()
	return !failed.Load(), err
}

// markPending records, before a run first changes the tree, that a run
// is under way: one that finds it set knows the last was interrupted.
// A snapshot made the tree exactly is recorded as unfinished with it.
// The state may say so already (the last run was killed): the run is
// marked all the same, and ends by clearing it (finishState). One
// unpacker may apply several documents in turn (UnpackAll, a directory's
// dumps), each of which clears the mark at its end: the next marks again.
func (u *unpacker) markPending() error {
	r := u.rebase
	mark := r != nil && !r.marked
	if u.opts.DryRun || !mark && u.marked && u.state().Pending {
		return nil
	}
	s := u.state()
	s.Pending = true
	if mark {
		s.Unfinished = r.record(s.Unfinished)
	}
	if err := u.saveState(s); err != nil {
		return err
	}
	u.marked = true
	if mark {
		r.marked = true
	}
	return nil
}

// changeDump applies the packages one after the other, in document
// order, skipping those whose changes the state says are applied (the
// rules are in changes.go). It stops at the first package that fails or
// leaves a gap: applying later changes over a missing one could leave a
// state no Source ever had, and the state must not move past it. Up to
// Jobs packages stage at once (see pipeline); the commits stay in order.
func (u *unpacker) changeDump(ctx context.Context, d *pkgread.Dump) error {
	pkgread.Announce(d.Packages, u.opts.Events)
	if !u.checkChain(d) {
		u.stopAfter(nil, d.Packages, 0, "the Change Dump's packages do not follow one another")
		return nil
	}
	pl := u.newPipeline(d.Packages)
	defer pl.close()
	for i, ref := range d.Packages {
		if until := ref.Until(); !until.IsZero() && !u.state().Applies(until) {
			pl.skip(i)
			u.skipPackage(ref, "its changes are already applied (until "+resourcesync.FormatTime(until)+")")
			continue
		}
		if from, _ := refWindow(ref); !from.IsZero() && !u.continues(u.rep, ref, from) {
			u.stopAfter(pl, d.Packages, i, "it does not continue from the tree's state")
			break
		}
		out, err := pl.apply(ctx, i)
		if err != nil {
			return err
		}
		if !out.ok {
			u.stopAfter(pl, d.Packages, i+1, "an earlier package of the Change Dump failed")
			break
		}
		if err := u.advance(ref.Until(), out.lastChange, d.Source); err != nil {
			return err
		}
	}
	s := u.state()
	s.Pending = false
	return u.finishState(s)
}

func (u *unpacker) skipPackage(ref pkgread.PackageRef, why string) {
	pkgread.NewMeter(u.opts.Events, ref).Finish()
	u.rep.Report(finding.Finding{Severity: finding.OK, Code: CheckSkipped, Source: ref.Loc, URI: ref.Entry.Loc, Msg: "package skipped: " + why})
}

// stopAfter reports the packages refs[from:] left unapplied, and why. A
// package pl staged ahead is thrown away and its meter finished, so that
// the bytes it counted while it staged count once.
func (u *unpacker) stopAfter(pl *pipeline, refs []pkgread.PackageRef, from int, why string) {
	for i := from; i < len(refs); i++ {
		ref := refs[i]
		m := pl.take(i)
		if m == nil {
			m = pkgread.NewMeter(u.opts.Events, ref)
		}
		m.Finish()
		u.rep.Report(finding.Finding{Severity: finding.Error, Code: CheckSkipped, Source: ref.Loc, URI: ref.Entry.Loc,
			Msg: "package not applied: " + why})
	}
}

// advance records that changes up to until (or, for a package that gives
// no until, its last change) are applied.
func (u *unpacker) advance(until, lastChange time.Time, src string) error {
	if until.IsZero() {
		until = lastChange
	}
	if until.IsZero() || !until.After(u.state().ChangeDumpUntil) {
		return nil
	}
	s := u.state()
	s.ChangeDumpUntil, s.Source = until, src
	return u.saveState(s)
}
