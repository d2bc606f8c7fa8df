// Package replica keeps a local copy of a ResourceSync Source exact: sync
// as a library. It discovers the Source's documents (§6.3), takes a
// baseline from its newest Resource Dump (through the transfer engine,
// from every mirror, piece by piece checked) or, with none, from its
// Resource List resource by resource, and later applies the Change Dumps
// (or the Change List) after the tree's last until, in order; a newer
// snapshot the changes do not reach re-bases the tree, fetching only what
// differs (unpack.Options.Rebase), and a snapshot an earlier run left
// half-applied is finished first (deststate.Unfinished). Every
// bitstream lands through unpack: verified, staged, renamed, logged; the
// state lives in unpack's DIR/.rsdump/state.json.
package replica

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/rsdump/rsdump/deststate"
	"github.com/rsdump/rsdump/finding"
	"github.com/rsdump/rsdump/internal/httpc"
	"github.com/rsdump/rsdump/pkgread"
	"github.com/rsdump/rsdump/resourcesync"
	"github.com/rsdump/rsdump/s3"
	"github.com/rsdump/rsdump/transfer"
	"github.com/rsdump/rsdump/transfer/pkgfetch"
	"github.com/rsdump/rsdump/trs"
	"github.com/rsdump/rsdump/unpack"
	"github.com/rsdump/rsdump/verify"
)

// Options configure Sync.
type Options struct {
	// BaseURL is the URI prefix that maps to the tree; default the one
	// the state records, else the one the Source's first manifest or
	// list implies.
	BaseURL string
	DryRun  bool // say what would change; write nothing
	Audit   bool // end with the tree check against the Resource List (or Dump)
	// Adopt and Overwrite are unpack's: files already in the tree that
	// rsdump did not write are adopted when they hold their resource, and
	// with Overwrite replaced when they do not; without either a first
	// sync into a directory with files at the resources' names refuses.
	Adopt, Overwrite bool
	// Rollback lets a baseline older than the tree replace it
	// (unpack.Options.Rollback); without it such a baseline is refused.
	Rollback bool
	// Transfer tunes the engine that fetches packages; Client reads
	// documents and resources (default transfer.NewClient(Transfer), so
	// that Transfer's StallTimeout and MinSpeed hold for them too).
	Transfer transfer.Options
	Client   *http.Client
	Jobs     int // packages unpacked at once
	Fetches  int // resources fetched at once from a list [DefaultFetches]
	// MaxResourceSize is the most taken of a list's resource whose entry
	// gives no length (unpack.Options.MaxResourceSize).
	MaxResourceSize int64
	pkgread.Limits
	// TRS bounds the walks of a Tracked Resource Set's Change Log and Base
	// (trs.Limits; zero fields take its defaults).
	TRS trs.Limits

	// Events receives the events of unpack.Options.Events (every finding,
	// and the progress in bytes), and a finding.Note for each step sync
	// takes, in words.
	Events func(finding.Event)
}

// Step is one document sync applied.
type Step struct {
	Kind   string         `json:"kind"` // "baseline", "rebase", "finish" or "incremental"
	Doc    string         `json:"document"`
	Reason string         `json:"reason,omitempty"`
	Result *unpack.Result `json:"result"`
}

// Result sums up a sync.
type Result struct {
	Source  *Source              `json:"source"`
	Repair  *unpack.RepairResult `json:"repair,omitempty"` // the check of the tree against what rsdump wrote
	BaseURL string               `json:"base_url"`
	Steps   []Step               `json:"steps"`
	Until   time.Time            `json:"until,omitzero"` // what the tree is now up to
	Audit   *verify.Summary      `json:"audit,omitempty"`
	Trust   *Trust               `json:"trust,omitempty"` // the keys whose signatures the run required
	Notes   []string             `json:"notes,omitempty"` // the steps taken and decisions made, in words
	unpack.Result
}

// DefaultFetches is how many resources Sync fetches at once from a
// Resource List or Change List: over connections kept alive (the
// client's idle pool holds as many per host), enough to hide the latency
// of small files between institutions, a bounded pool for the Source.
const DefaultFetches = 16

// ErrOtherSource is a tree that is the copy of another Source.
var ErrOtherSource = errors.New("the destination is a copy of another Source")

// Sync brings dir up to the Source at source (see Discover for what it
// may be; the zero Location is the Source the state records, reached with
// the S3 endpoint it records unless ctx gives one). Problems with
// documents, packages and resources are findings; the error is for a
// Source that cannot be found or read at all, a destination that cannot
// be used, or a cancelled context.
//
// The tree is opened once, its lock held for the whole run, and its state
// read once (deststate); a run that fails before it commits anything
// leaves the state as it was (a first run refused leaves no trace), and
// one that commits nothing records only that it ran: the Source, base URL
// and S3 endpoint it was given are recorded once they brought something
// into the tree.
func Sync(ctx context.Context, source resourcesync.Location, dir string, opts Options) (res *Result, err error) {
	if opts.Client == nil {
		opts.Client = transfer.NewClient(opts.Transfer)
	}
	if opts.Fetches <= 0 {
		opts.Fetches = DefaultFetches
	}
	d, err := deststate.Open(dir, deststate.Options{Command: "sync", DryRun: opts.DryRun, KeepCache: true})
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			d.CloseUnused() // a first run refused leaves no trace
			return
		}
		d.Close()
	}()
	s := &syncer{opts: opts, dir: d.Path(), tree: d, res: &Result{}}
	if st := d.State(); source.IsZero() && st.Sync != nil {
		// The Source and base URL the state records were given in the run
		// that recorded them, and so was their grant of S3, and the
		// endpoint it was reached at.
		ctx = s3.Grant(ctx, st.Sync.Source, st.Sync.BaseURL)
		if s3.ConfigFrom(ctx).Endpoint == "" && st.Sync.S3Endpoint != "" {
			ctx = s3.WithConfig(ctx, s3.Config{Endpoint: st.Sync.S3Endpoint})
		}
	}
	s.endpoint = s3Endpoint(ctx)
	if ctx, err = s.pin(ctx); err != nil {
		return nil, err
	}
	if err := s.prepare(ctx, source); err != nil {
		return nil, err
	}
	if err := s.refuseUnsignedTRS(ctx); err != nil {
		return nil, err
	}
	if err := s.repair(ctx); err != nil {
		return nil, err
	}
	run := s.run
	if s.src.TRS != "" {
		run = s.runTRS // trs.go
	}
	if err := run(ctx); err != nil {
		return nil, err
	}
	if err := s.unrepaired(ctx); err != nil {
		return nil, err
	}
	s.unfinished()
	res, err = s.finish(ctx)
	if err == nil && res.Problems() == 0 && !opts.DryRun {
		// Everything applied: what the cache kept to resume is of no use.
		if err := d.DropCache(); err != nil {
			s.note("%v", err)
		}
	}
	return res, err
}

type syncer struct {
	opts  Options
	dir   string
	tree  *deststate.Dir
	state deststate.State // as the run found it
	src   *Source
	given string
	base  string
	// endpoint is the S3 endpoint of the run's context, when it grants
	// S3: recorded with the Source.
	endpoint string
	res      *Result
	// trsPoint is the last Change Event of a Tracked Resource Set this
	// run applied (trs.go), recorded by finish.
	trsPoint *deststate.TRSPoint
}

func (s *syncer) note(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	s.res.Notes = append(s.res.Notes, msg)
	finding.Send(s.opts.Events, finding.Note{Msg: msg})
}

// prepare discovers the Source and settles the base URL.
func (s *syncer) prepare(ctx context.Context, source resourcesync.Location) error {
	st := s.tree.State()
	s.state = st
	var err error
	switch {
	case source.IsZero() && st.Sync == nil:
		return fmt.Errorf("%s records no Source: give one", s.dir)
	case source.IsZero():
		if source, err = resourcesync.ParseLocation(st.Sync.Source); err != nil {
			return fmt.Errorf("%s: the Source it records: %w", s.dir, err)
		}
	}
	s.given = source.String()
	if s.src, err = Discover(ctx, s.opts.Client, source); err != nil {
		return err
	}
	if !s.sameSource() {
		return fmt.Errorf("%s: %w, %s (sync into a new directory, or give that Source)", s.dir, ErrOtherSource, st.Sync.Source)
	}
	s.res.Source = s.src
	if s.base, err = s.baseURL(ctx); err != nil {
		return err
	}
	s.res.BaseURL = s.base
	// Recorded with the first commit, so that a run interrupted in its
	// baseline is resumed by a plain rsdump sync --dest DIR, and not
	// before: a Source or base URL that brought nothing into the tree
	// (a wrong guess, a Source that fails) is never recorded.
	info := s.syncInfo()
	if st.Sync != nil {
		info.Documents, info.LastRun = st.Sync.Documents, st.Sync.LastRun
	}
	s.tree.Amend(func(st *deststate.State) { st.Sync = &info })
	return nil
}

// syncInfo is what the run records of where the tree comes from: the
// Source, base URL and S3 endpoint it was given.
func (s *syncer) syncInfo() deststate.SyncInfo {
	return deststate.SyncInfo{Source: s.given, BaseURL: s.base, S3Endpoint: s.endpoint, Baseline: baselineKind(s.src)}
}

// s3Endpoint is the S3 endpoint ctx gives, when it grants S3: only then
// does the run reach S3 at it.
func s3Endpoint(ctx context.Context) string {
	if !s3.Granted(ctx) {
		return ""
	}
	return s3.ConfigFrom(ctx).Endpoint
}

// sameSource says whether the Source found is the one the tree is a copy
// of: the address given is the one recorded, or one of the documents
// found is one the tree was synced from (the Source reached another
// way: its base URL, then its Capability List, say).
func (s *syncer) sameSource() bool {
	st := s.state.Sync
	if st == nil || st.Source == s.given || s.state.Since().IsZero() {
		return true
	}
	for _, d := range st.Documents {
		for _, found := range s.src.Docs {
			if d == found {
				return true
			}
		}
	}
	return false
}

// repair checks a tree that has a copy against what rsdump wrote, and
// restores what differs or is missing from the Source's dumps and lists
// (unpack.Repair): with Audit every file is hashed. Damaged files none of
// them carries wait for the changes this run applies (unrepaired).
func (s *syncer) repair(ctx context.Context) error {
	if s.tree.State().Since().IsZero() {
		return nil
	}
	o, err := s.unpackOptions()
	if err != nil {
		return err
	}
	ro := repairSources(s.src)
	ro.HashAll = s.opts.Audit
	r, err := unpack.Repair(ctx, s.dir, ro, o)
	if err != nil {
		return err
	}
	s.res.Repair = r
	if r.Damaged > 0 {
		s.note("checked %s against what rsdump wrote: %s damaged or missing, %d repaired (%s fetched)",
			finding.Plural(r.Checked, "file"), finding.Plural(r.Damaged, "file"), r.Repaired, finding.Plural(r.Fetched, "byte"))
	}
	s.add(&r.Result)
	return nil
}

// unrepaired reports the damaged files the repair found no version of
// that the changes did not replace either.
func (s *syncer) unrepaired(ctx context.Context) error {
	if s.res.Repair == nil || len(s.res.Repair.Unrepaired) == 0 || s.opts.DryRun {
		return nil
	}
	o, err := s.unpackOptions()
	if err != nil {
		return err
	}
	n, err := unpack.Unrepaired(ctx, s.dir, s.res.Repair.Unrepaired, o)
	s.res.Errors += n
	return err
}

// run takes a baseline when the tree has none (or nothing covers the gap
// since its last), then applies the changes after it. A snapshot of the
// Source newer than what the tree holds, which its changes do not reach
// (a Source that re-packs its Resource Dump, say, and publishes no Change
// Dump), re-bases the tree: the tree is made exactly that snapshot,
// fetching only what differs (unpack.Options.Rebase). A snapshot an
// earlier run left half-applied is finished first.
//
// A tree never synced that holds the Source's own Resource Dump (rsdump
// unpack of its URL, or a sharded restore's merge) has its baseline: only
// the changes after it are applied, not the dump again, which would hash
// every file of the tree.
func (s *syncer) run(ctx context.Context) error {
	finished, err := s.finishUnfinished(ctx)
	switch {
	case err != nil:
		return err
	case s.tree.State().Unfinished != nil:
		return nil // reported by unfinished; nothing is applied over it
	case finished:
		return s.incremental(ctx, true)
	}
	st := s.tree.State()
	since := st.Since()
	holdsDump := st.Source != "" && st.Source == s.src.Docs[resourcesync.CapResourceDump] && st.ChangeDumpUntil.IsZero()
	if since.IsZero() || s.state.Sync == nil && !holdsDump {
		if err := s.baseline(ctx, "the destination has no complete copy yet"); err != nil {
			return err
		}
		return s.incremental(ctx, true)
	}
	snap, err := s.newerSnapshot(ctx, since)
	if err != nil || snap.doc == "" {
		if err != nil {
			return err
		}
		return s.incremental(ctx, false)
	}
	doc, _, gap, err := s.changeDoc(ctx, since)
	if err != nil {
		return err
	}
	reach, err := s.changesReach(ctx, doc, snap.at)
	if err != nil || reach {
		if err != nil {
			return err
		}
		return s.incremental(ctx, false)
	}
	st1 := step{kind: "rebase", doc: snap.doc, list: snap.list,
		why: fmt.Sprintf("the Source's %s is at %s, newer than what the destination holds (%s)", snap.capability(), resourcesync.FormatTime(snap.at), st.Describe())}
	if gap != "" {
		st1.kind, st1.why = "baseline", gap+"; taking a new baseline"
	}
	if err := s.apply(ctx, st1); err != nil {
		return err
	}
	return s.incremental(ctx, true)
}

// snapshot is a Resource Dump or Resource List of the Source, and its at.
type snapshot struct {
	doc  string
	list bool
	at   time.Time
}

func (sn snapshot) capability() string {
	if sn.list {
		return "Resource List"
	}
	return "Resource Dump"
}

// currentSnapshot is the Source's snapshot: its Resource Dump, else its
// Resource List; the zero snapshot when it has neither.
func (s *syncer) currentSnapshot() snapshot {
	if d := s.src.Docs[resourcesync.CapResourceDump]; d != "" {
		return snapshot{doc: d}
	}
	return snapshot{doc: s.src.Docs[resourcesync.CapResourceList], list: true}
}

// newerSnapshot is the Source's snapshot when its at is later than since;
// the zero snapshot when there is none, or it gives no at.
func (s *syncer) newerSnapshot(ctx context.Context, since time.Time) (snapshot, error) {
	sn := s.currentSnapshot()
	if sn.doc == "" {
		return snapshot{}, nil
	}
	h, err := peek(ctx, s.opts.Client, sn.doc)
	if missing(err) {
		s.note("the %s %s is listed but missing: %v", sn.capability(), sn.doc, err)
		return snapshot{}, nil
	}
	if err != nil {
		return snapshot{}, err
	}
	if sn.at = h.MD.At; sn.at.IsZero() || !sn.at.After(since) {
		return snapshot{}, nil
	}
	return sn, nil
}

// changesReach says whether the change document doc (changeDoc's: its
// changes start at or before the tree's) reaches at: applying it then
// brings the tree at least as far as a re-base to the snapshot taken at
// at, for less.
func (s *syncer) changesReach(ctx context.Context, doc string, at time.Time) (bool, error) {
	if doc == "" {
		return false, nil
	}
	h, err := peek(ctx, s.opts.Client, doc)
	if err != nil {
		return false, err
	}
	return !h.MD.Until.Before(at), nil
}

// finishUnfinished takes the Source's current snapshot when an earlier
// run began to make the tree exactly a snapshot and did not complete
// (deststate.Unfinished: it failed part way, or was killed): the tree
// holds part of it and part of what it held before, whatever its state
// says. When the snapshot is the Source's, this finishes it; when it is
// another (a local dump unpacked with --rollback, a dump the Source has
// since replaced), this undoes it. An older snapshot is taken only when
// the one left unfinished was a rollback (or with --rollback): a Source
// cannot move the tree back by making a run fail. A Source with no
// snapshot has the unfinished one applied again. applied says a snapshot
// was applied (whole or not: the state says).
func (s *syncer) finishUnfinished(ctx context.Context) (applied bool, err error) {
	u := s.tree.State().Unfinished
	if u == nil {
		return false, nil
	}
	sn := s.currentSnapshot()
	st := step{kind: "finish", doc: sn.doc, list: sn.list, rollback: u.Rollback, why: "finishing " + u.Describe()}
	switch {
	case sn.doc == "":
		h, err := peek(ctx, s.opts.Client, u.Document)
		if err != nil {
			if ctx.Err() != nil {
				return false, ctx.Err()
			}
			s.note("the destination is half-applied (%s), and the Source has no Resource Dump or Resource List to finish it with: %v", u.Describe(), err)
			return false, nil
		}
		st.doc, st.list = u.Document, h.MD.Capability == resourcesync.CapResourceList
	case sn.doc != u.Document:
		st.kind, st.why = "rebase", "in place of "+u.Describe()
	}
	s.note("the last run left the destination half-applied: %s; applying %s", u.Describe(), st.doc)
	if err := s.apply(ctx, st); err != nil {
		return false, err
	}
	return true, nil
}

// unfinished reports, as an error, a tree the run leaves half-applied: a
// snapshot begun and not completed, by this run or an earlier one. No
// run over such a tree ends without an error.
func (s *syncer) unfinished() {
	u := s.tree.State().Unfinished
	if u == nil || s.opts.DryRun {
		return
	}
	msg := "the destination is half-applied: " + u.Describe() + "; the next sync applies it again"
	finding.Send(s.opts.Events, finding.Finding{Severity: finding.Error, Code: unpack.CheckUnfinished, Source: u.Document, Msg: msg})
	s.res.Errors++
}

func (s *syncer) baseline(ctx context.Context, why string) error {
	switch {
	case s.src.Docs[resourcesync.CapResourceDump] != "":
		return s.apply(ctx, step{kind: "baseline", doc: s.src.Docs[resourcesync.CapResourceDump], why: why})
	case s.src.Docs[resourcesync.CapResourceList] != "":
		return s.apply(ctx, step{kind: "baseline", doc: s.src.Docs[resourcesync.CapResourceList], list: true,
			why: why + "; the Source has no Resource Dump, so resource by resource from its Resource List"})
	}
	return fmt.Errorf("%s: the Source has no Resource Dump and no Resource List to take a baseline from", s.given)
}

// incremental applies the Change Dump, or without one the Change List,
// when it covers the time since the tree's last update; when neither
// does, it takes a new baseline, unless one was just taken.
func (s *syncer) incremental(ctx context.Context, afterBaseline bool) error {
	since := s.tree.State().Since()
	if since.IsZero() {
		return nil // the baseline did not complete: its findings say why
	}
	doc, isList, gap, err := s.changeDoc(ctx, since)
	if err != nil {
		return err
	}
	switch {
	case doc == "" && gap == "":
		if !afterBaseline {
			s.note("the Source publishes no Change Dump or Change List; nothing to apply after %s", resourcesync.FormatTime(since))
		}
		return nil
	case doc == "" && afterBaseline:
		s.note("%s; the changes after the baseline wait for a later run", gap)
		return nil
	case doc == "":
		if err := s.baseline(ctx, gap+"; taking a new baseline"); err != nil {
			return err
		}
		return s.incremental(ctx, true)
	}
	return s.apply(ctx, step{kind: "incremental", doc: doc, why: "changes after " + resourcesync.FormatTime(since), list: isList})
}

// changeDoc picks the Change Dump, else the Change List, whose changes
// start at or before since; gap says why none can be used.
func (s *syncer) changeDoc(ctx context.Context, since time.Time) (doc string, isList bool, gap string, err error) {
	var gaps []string
	for _, c := range []string{resourcesync.CapChangeDump, resourcesync.CapChangeList} {
		loc := s.src.Docs[c]
		if loc == "" {
			continue
		}
		from, err := s.coverage(ctx, loc)
		if missing(err) {
			// Listed but not (yet) published: a Source may name its Change
			// List before it has changes.
			s.note("the %s %s is listed but missing: %v", c, loc, err)
			continue
		}
		if err != nil {
			return "", false, "", err
		}
		if from.IsZero() || !from.After(since) {
			return loc, c == resourcesync.CapChangeList, "", nil
		}
		gaps = append(gaps, fmt.Sprintf("the %s %s starts at %s", c, loc, resourcesync.FormatTime(from)))
	}
	if len(gaps) == 0 {
		return "", false, "", nil
	}
	return "", false, fmt.Sprintf("the destination is up to %s, but %s: changes in between are lost", resourcesync.FormatTime(since), joinAnd(gaps)), nil
}

// coverage is the from of a change document: where its changes start;
// zero when it does not say.
func (s *syncer) coverage(ctx context.Context, loc string) (time.Time, error) {
	h, err := peek(ctx, s.opts.Client, loc)
	if err != nil {
		return time.Time{}, err
	}
	return h.MD.From, nil
}

// missing says whether err is a document the server says is not there.
func missing(err error) bool {
	var se *httpc.StatusError
	return errors.As(err, &se) && (se.Code == http.StatusNotFound || se.Code == http.StatusGone)
}

func joinAnd(parts []string) string {
	out := parts[0]
	for _, p := range parts[1:] {
		out += ", and " + p
	}
	return out
}

// step is a document sync applies: kind names it in the result.
type step struct {
	kind, doc, why string
	list           bool // a list, else a dump
	rollback       bool // it may be older than the tree (unpack.Options.Rollback)
}

// apply unpacks a dump or applies a list into the tree. A snapshot (a
// Resource Dump or Resource List) applied over a tree rsdump has written
// in makes it exactly that snapshot (unpack.Options.Rebase).
func (s *syncer) apply(ctx context.Context, st step) error {
	s.note("%s: %s (%s)", st.kind, st.doc, st.why)
	o, err := s.unpackOptions()
	if err != nil {
		return err
	}
	o.Rebase = true
	o.Rollback = o.Rollback || st.rollback
	var r *unpack.Result
	if st.list {
		r, err = unpack.ApplyList(ctx, st.doc, s.dir, o)
	} else {
		r, err = unpack.Unpack(ctx, st.doc, s.dir, o)
	}
	if err != nil {
		return err
	}
	s.res.Steps = append(s.res.Steps, Step{Kind: st.kind, Doc: st.doc, Reason: st.why, Result: r})
	s.add(r)
	return nil
}

func (s *syncer) unpackOptions() (unpack.Options, error) {
	m, err := deststate.NewMapper(deststate.ByURI, s.base)
	if err != nil {
		return unpack.Options{}, err
	}
	return unpack.Options{Dir: s.tree, Mapper: m, DryRun: s.opts.DryRun, Adopt: s.opts.Adopt, Overwrite: s.opts.Overwrite, Rollback: s.opts.Rollback,
		Limits: s.opts.Limits, Jobs: s.opts.Jobs, Client: s.opts.Client,
		Transfer: s.opts.Transfer, ResumeDownloads: true, Fetches: s.opts.Fetches, MaxResourceSize: s.opts.MaxResourceSize,
		Events: s.opts.Events}, nil
}

func (s *syncer) add(r *unpack.Result) {
	t := &s.res.Result
	t.Packages += r.Packages
	t.Written += r.Written
	t.Present += r.Present
	t.Deleted += r.Deleted
	t.Refused += r.Refused
	t.Bytes += r.Bytes
	t.OK += r.OK
	t.Warnings += r.Warnings
	t.Unverified += r.Unverified
	t.Errors += r.Errors
}

// finish records the Source in the state, when the tree is a copy of it
// (this run or an earlier one committed to it), and runs the audit. A run
// that committed nothing and refused or failed something records nothing
// either: it leaves the Destination byte for byte as it was.
func (s *syncer) finish(ctx context.Context) (*Result, error) {
	st := s.tree.State()
	s.res.Until = st.Since()
	clean := s.res.Problems() == 0 && s.res.Refused == 0
	if !s.opts.DryRun && (s.tree.Saved() || s.state.Sync != nil && clean) {
		info := s.syncInfo()
		if !s.tree.Saved() {
			// Nothing came into the tree: the Source, base URL and
			// endpoint it was brought from stay the ones recorded.
			info = *s.state.Sync
			info.Documents = nil
		}
		info.LastRun = time.Now().UTC()
		for _, st := range s.res.Steps {
			info.Documents = append(info.Documents, st.Doc)
		}
		if s.state.Sync != nil && len(info.Documents) == 0 {
			info.Documents = s.state.Sync.Documents
		}
		if info.TRS = s.trsPoint; info.TRS == nil && s.state.Sync != nil && s.src.TRS != "" {
			info.TRS = s.state.Sync.TRS
		}
		if err := s.tree.Update(func(st *deststate.State) { st.Sync = &info }); err != nil {
			return nil, err
		}
	}
	if s.opts.Audit {
		if err := s.audit(ctx); err != nil {
			return nil, err
		}
	}
	return s.res, nil
}

func baselineKind(src *Source) string {
	if src.Docs[resourcesync.CapResourceDump] != "" {
		return resourcesync.CapResourceDump
	}
	return resourcesync.CapResourceList
}

// audit checks the tree against the Source's Resource List, or with
// none its Resource Dump (§5.2's Audit).
func (s *syncer) audit(ctx context.Context) error {
	against := s.src.Docs[resourcesync.CapResourceList]
	if against == "" {
		against = s.src.Docs[resourcesync.CapResourceDump]
	}
	if against == "" {
		return fmt.Errorf("--audit: the Source has no Resource List or Resource Dump to audit against")
	}
	s.note("audit: %s against %s", s.dir, against)
	m, err := deststate.NewMapper(deststate.ByURI, s.base)
	if err != nil {
		return err
	}
	sum, err := verify.Audit(ctx, s.dir, against, m, verify.Options{Client: s.opts.Client, Packages: &pkgfetch.Remote{Transfer: s.opts.Transfer, Client: s.opts.Client},
		Events: s.opts.Events, Jobs: s.opts.Jobs, AllowExtras: true})
	if err != nil {
		return err
	}
	s.res.Audit = sum
	return nil
}
