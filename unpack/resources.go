package unpack

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/rsdump/rsdump/deststate"
	"github.com/rsdump/rsdump/finding"
	"github.com/rsdump/rsdump/internal/digest"
	"github.com/rsdump/rsdump/internal/entryspool"
	"github.com/rsdump/rsdump/internal/extsort"
	"github.com/rsdump/rsdump/internal/httpc"
	"github.com/rsdump/rsdump/internal/iocount"
	"github.com/rsdump/rsdump/pkgread"
	"github.com/rsdump/rsdump/resourcesync"
)

// DefaultMaxResourceSize is the most ApplyList takes of a resource whose
// entry gives no length: larger than most single files a repository
// holds, small enough that a server that never ends its answer cannot
// fill a disk unnoticed. An entry that gives a length is cut off there.
const DefaultMaxResourceSize = 64 << 30

// defaultFetches is how many resources ApplyList fetches at once: enough
// to hide the latency of small files, few enough to be polite to a
// Source that serves resources one GET at a time.
const defaultFetches = 8

// listBatch is how many entries of a list are planned, fetched and
// committed together: a third of a full list document, so that memory
// stays some 60-80 MB whatever the list's size (about 1.8 KB an entry
// held, two batches at a time: one committing, the next staging),
// while the costs paid once a batch (the written log is read through for
// the targets a batch replaces, deletes or adopts; the syncs) stay few:
// 4,096 took half as much memory and 1.5 times as long to adopt 805,000
// files. A variable for tests.
var listBatch = 16384

// ApplyList brings dir up to the Resource List or Change List at loc (an
// http(s) URL or a file; an index is followed, part by part), fetching
// each resource from its own URI through Options.Client, Options.Fetches
// at once. A resource streams into a staging file while its length and
// hashes are computed and is committed as a package's bitstream is: only
// when both match the list, never over a file that fails. Resources
// already in place are not fetched again, so a run that was stopped
// resumes where it was. Deletions remove only files rsdump wrote.
//
// A Resource List is a baseline: once every resource is in place the
// state records its at; a resource listed twice is refused the second
// time. A Change List applies the changes after the state's until, the
// last change of each resource winning (across the parts of an index
// too), and moves the until to the list's (or its last change's) once
// all applied.
//
// Memory does not grow with the list: the list is read once, its entries
// spooled to disk and their targets sorted there (listSurvey), then
// applied listBatch entries at a time.
func ApplyList(ctx context.Context, loc, dir string, opts Options) (*Result, error) {
	u, err := start(dir, opts)
	if err != nil {
		return nil, err
	}
	defer u.dest.close()
	defer u.endRebase()
	u.signed = resourcesync.Trust(ctx) != nil
	sv, err := newListSurvey(u.scratchDir())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", u.dest.dir, err)
	}
	defer sv.close()
	l := &listRun{u: u, top: loc, sv: sv}
	if u.needsGuard() {
		l.guard = &foreign{dir: u.dest.dir}
	}
	defer func() { l.takeEarly().discard() }()
	ld := resourcesync.Loader{
		Open:     u.docs.Open,
		Document: func(d *resourcesync.Document) error { return l.document(ctx, d) },
		Entry:    func(d *resourcesync.Document, _ int, e resourcesync.URL) error { return l.entry(ctx, d, e) },
		NotAfter: resourcesync.Horizon(),
		// The parts of a Change List Index the tree has applied are not
		// read again: none of their changes would apply.
		SkipPart: func(index *resourcesync.Document, _ int, e resourcesync.URL) bool {
			return index.Header.MD.Capability == resourcesync.CapChangeList && e.MD != nil && !e.MD.Until.IsZero() && !u.state().Applies(e.MD.Until)
		},
	}
	if err := ld.Load(ctx, loc); err != nil {
		return nil, err
	}
	if l.guard != nil {
		if err := l.guard.err(); err != nil {
			return nil, err
		}
	}
	if l.early != nil && l.early.staged == nil {
		l.early = nil // the first document was the last, and short: nothing to stage before the apply
	}
	if err := u.startRebase(ctx); err != nil {
		return nil, err
	}
	if err := l.apply(ctx); err != nil {
		return nil, err
	}
	if err := l.finish(ctx); err != nil {
		return nil, err
	}
	u.reportUnfinished()
	return u.result(), nil
}

// listRun applies a list: read whole into its survey, then applied batch
// by batch.
type listRun struct {
	u          *unpacker
	top        string
	header     resourcesync.Header // of the top document
	sv         *listSurvey
	docs       []listDoc // the documents with entries, in list order
	lastChange time.Time
	failed     bool
	// guard is guardFresh for a Resource List: a first run into a
	// directory that holds files at its resources' names refuses once
	// the survey found them all, before anything lands; nil when the run
	// needs no guard.
	guard *foreign
	early *earlyBatch // the list's first batch, staged during the survey
}

// listDoc is a document of entries and the seq of its first entry.
type listDoc struct {
	loc   string
	first int64
}

// listItem is an entry to apply: n counts from 1 in its document; dup,
// when set, is why it is refused (a Resource List's second entry of a
// target).
type listItem struct {
	n   int
	e   resourcesync.URL
	dup string
}

func (l *listRun) document(ctx context.Context, d *resourcesync.Document) error {
	if d.Index == nil {
		switch c := d.Header.MD.Capability; c {
		case resourcesync.CapResourceList, resourcesync.CapChangeList:
			if l.header.MD.Capability == "" && c == resourcesync.CapResourceList {
				if err := l.u.checkSnapshot(l.top, d.Header.MD.At); err != nil {
					return err
				}
				if r := l.u.rebase; r != nil {
					r.ahead = true // the survey reads the whole list before any of it applies
				}
			}
			l.header = d.Header
		default:
			return fmt.Errorf("%s: capability %q: not a Resource List or Change List", d.Loc, c)
		}
	}
	if d.Header.Kind == resourcesync.URLSet {
		l.docs = append(l.docs, listDoc{loc: d.Loc, first: l.sv.seq})
		if len(l.docs) == 2 {
			l.startEarly(ctx) // the first document is whole
		}
	}
	return nil
}

// entry spools an entry, and its target for the overrides: not that of
// a change the state says is applied, which is skipped (old). A list
// that names a resource it may not (resourcesync.Ref) is refused.
func (l *listRun) entry(ctx context.Context, d *resourcesync.Document, u resourcesync.URL) error {
	if d.Header.Kind != resourcesync.URLSet {
		return nil
	}
	if _, err := resourcesync.Ref(ctx, d.Loc, u.Loc); err != nil {
		return err
	}
	if when, _ := u.ChangeTime(); l.isChange() && when.After(l.lastChange) {
		l.lastChange = when
	}
	if l.guard != nil && d.Header.MD.Capability == resourcesync.CapResourceList {
		if t, ok := l.u.foreignTarget(u); ok {
			l.guard.add(t)
		}
	}
	if l.old(u) {
		return l.sv.add(u, "")
	}
	target, _ := l.u.opts.Mapper.Target(u) // refused when applied
	if r := l.u.rebase; r != nil && !l.isChange() {
		r.add(target)
	}
	l.collectEarly(ctx, d, l.sv.seq, u, target)
	return l.sv.add(u, target)
}

// old says whether u is a change at or before the state's until. A
// change of unknown time (a 1.0 deletion) is always applied: it removes
// only a file that is still the version it names or the one rsdump wrote.
func (l *listRun) old(u resourcesync.URL) bool {
	when, known := u.ChangeTime()
	return l.isChange() && known && !l.u.state().Applies(when)
}

func (l *listRun) isChange() bool {
	return l.header.MD.Capability == resourcesync.CapChangeList
}

// apply reads the spooled entries back in order, leaves out those
// overridden, and applies the others in batches of listBatch, a batch
// never spanning two documents.
func (l *listRun) apply(ctx context.Context) error {
	over, err := l.sv.overrides(l.isChange())
	if err != nil {
		return fmt.Errorf("%s: sorting the list's entries: %w", l.u.dest.dir, err)
	}
	rd, err := entryspool.Open[resourcesync.URL](l.sv.name, entryspool.Source{})
	if err != nil {
		return fmt.Errorf("%s: the list's entries: %w", l.u.dest.dir, err)
	}
	defer rd.Close()
	b := &listBatcher{l: l, over: over, next: override{seq: -1}}
	defer func() { b.staged.discard() }() // staged, not committed: a run that failed
	for seq := int64(0); ; seq++ {
		e, err := rd.Next()
		if err == io.EOF {
			if err := b.endDoc(ctx); err != nil {
				return err
			}
			return b.commitStaged()
		}
		if err != nil {
			return fmt.Errorf("%s: the list's entries: %w", l.u.dest.dir, err)
		}
		if err := b.add(ctx, seq, e); err != nil {
			return err
		}
	}
}

// listBatcher gathers the entries of one document into batches.
type listBatcher struct {
	l      *listRun
	over   extsort.Source[override]
	next   override // the next entry overridden; seq -1 before the first read, maxInt64 after the last
	doc    int      // index in l.docs of the batch's document
	items  []listItem
	old    int          // changes of the document applied before
	begun  bool         // the document has had a batch
	staged *stagedBatch // the batch before, staging or staged, not committed
}

func (b *listBatcher) add(ctx context.Context, seq int64, e resourcesync.URL) error {
	if doc := b.l.docAt(seq); doc != b.doc {
		if err := b.endDoc(ctx); err != nil {
			return err
		}
		b.doc, b.begun = doc, false
	}
	o, err := b.override(seq)
	switch {
	case err != nil:
		return fmt.Errorf("%s: sorting the list's entries: %w", b.l.u.dest.dir, err)
	case b.l.old(e):
		b.old++
		return nil
	case o != nil && o.of < 0:
		return nil // superseded by a later change of its resource
	}
	it := listItem{n: int(seq - b.l.docs[b.doc].first + 1), e: e}
	if o != nil {
		it.dup = b.l.duplicate(b.doc, it.n, o.of)
	}
	b.items = append(b.items, it)
	if len(b.items) < listBatch {
		return nil
	}
	return b.flush(ctx)
}

// override returns the override of entry seq, if there is one.
func (b *listBatcher) override(seq int64) (*override, error) {
	for b.next.seq < seq {
		o, ok, err := b.over.Next()
		if err != nil {
			return nil, err
		}
		if !ok {
			o.seq = math.MaxInt64
		}
		b.next = o
	}
	if b.next.seq == seq {
		return &b.next, nil
	}
	return nil, nil
}

// flush starts staging the batch held and commits the one before it
// meanwhile (stagedBatch); a dry run plans the batch there and then.
func (b *listBatcher) flush(ctx context.Context) error {
	if len(b.items) == 0 {
		return nil
	}
	doc, first := b.l.docs[b.doc].loc, !b.begun
	if b.l.u.opts.DryRun {
		_, err := b.l.stageBatch(ctx, doc, b.items, first, b.l.isChange())
		clear(b.items) // drop what the entries point to
		b.items, b.begun = b.items[:0], true
		return err
	}
	prev := b.staged
	if prev != nil {
		if _, err := prev.wait(); err != nil { // one batch staging at a time
			return err // the deferred discard clears it
		}
	}
	b.staged = b.l.stage(ctx, doc, b.items, first)
	b.items, b.begun = nil, true // the staging holds them now
	if prev == nil {
		return nil
	}
	return b.l.commitStaged(prev)
}

// commitStaged commits the batch staged last, if there is one.
func (b *listBatcher) commitStaged() error {
	s := b.staged
	b.staged = nil
	if s == nil {
		return nil
	}
	return b.l.commitStaged(s)
}

// endDoc applies the document's last batch and reports its changes
// skipped as applied before.
func (b *listBatcher) endDoc(ctx context.Context) error {
	if err := b.flush(ctx); err != nil {
		return err
	}
	if b.old > 0 {
		b.l.u.rep.Report(finding.Finding{Severity: finding.OK, Code: CheckSkipped, Source: b.l.docs[b.doc].loc,
			Msg: fmt.Sprintf("%s at or before %s applied by an earlier run", finding.Plural(b.old, "change"), resourcesync.FormatTime(b.l.u.state().ChangeDumpUntil))})
		b.old = 0
	}
	return nil
}

// docAt is the index of the document entry seq is in.
func (l *listRun) docAt(seq int64) int {
	return sort.Search(len(l.docs), func(i int) bool { return l.docs[i].first > seq }) - 1
}

// duplicate says why entry n of document doc, which lands on the target
// of entry of, is refused.
func (l *listRun) duplicate(doc, n int, of int64) string {
	od := l.docAt(of)
	msg := fmt.Sprintf("entry %d lands on the same file as entry %d", n, of-l.docs[od].first+1)
	if od != doc {
		msg += " of " + l.docs[od].loc
	}
	return msg
}

// stageBatch plans a batch of entries of the document doc and fetches
// every resource still needed into the stage: everything short of
// changing the tree. change says the list is a Change List. A dry run
// reports the plan instead, and returns no run. Close the run when done.
func (l *listRun) stageBatch(ctx context.Context, doc string, items []listItem, first, change bool) (*pkgRun, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	p := &pkgRun{u: l.u, ref: pkgread.PackageRef{Loc: doc, Length: -1}, rep: finding.NewReporter(l.u.rep.Send),
		m: pkgread.NewMeter(nil, pkgread.PackageRef{Length: 0}), listChange: change}
	p.planList(items)
	if r := l.u.rebase; r != nil {
		r.hold(p.actions)
	}
	if first {
		l.u.count(func(r *Result) { r.Packages++ })
	}
	if l.u.dest.root != nil {
		p.dirs = newDirs(l.u.dest.root)
	}
	if change {
		// A Change List's batch before may be committing: its deletions
		// would make a path the check looks at vanish half-way (a file
		// where a directory is needed taken for an unreachable target).
		l.u.commitMu.Lock()
		err := p.checkPresent()
		l.u.commitMu.Unlock()
		if err != nil {
			p.close()
			return nil, err
		}
	} else if err := p.checkPresent(); err != nil {
		p.close()
		return nil, err
	}
	if l.u.opts.DryRun {
		defer p.close()
		return nil, p.dryRun()
	}
	if err := p.fetchAll(ctx); err != nil {
		p.close()
		return nil, err
	}
	return p, nil
}

// commitStaged applies a staged batch to the tree, as a package's
// bitstreams are applied, and closes its run.
func (l *listRun) commitStaged(s *stagedBatch) error {
	p, err := s.wait()
	s.cancel()
	if err != nil {
		return err
	}
	defer p.close()
	if err := p.apply(); err != nil {
		return err
	}
	if p.rep.Counts().Problems() > 0 {
		l.failed = true
	}
	return nil
}

// finish records in the state what the list brought the tree up to.
func (l *listRun) finish(ctx context.Context) error {
	s := l.u.state()
	s.Pending = false
	if !l.failed && l.u.complete() {
		if l.isChange() {
			until := l.header.MD.Until
			if until.IsZero() {
				until = l.lastChange
			}
			if until.After(s.ChangeDumpUntil) {
				s.ChangeDumpUntil = until
			}
		} else {
			if l.u.rebase != nil {
				if err := l.u.finishRebase(ctx, &s); err != nil {
					return err
				}
			}
			s.ResourceDumpAt, s.ChangeDumpUntil = l.header.MD.At, time.Time{}
		}
		s.Source = l.top
		return l.u.saveState(s)
	}
	return l.u.finishState(s)
}

// planList turns list entries into actions, as plan does for a manifest;
// the survey has left out the changes superseded.
func (p *pkgRun) planList(items []listItem) {
	for _, it := range items {
		b := listBitstream(it.n, it.e, p.u.signed)
		target, err := p.u.opts.Mapper.Target(it.e)
		if err != nil {
			p.refuse(&action{b: b}, CheckTarget, err.Error())
			continue
		}
		a := &action{b: b, target: target}
		if it.dup != "" {
			p.refuse(a, CheckTarget, it.dup)
			continue
		}
		if b.Bad != "" {
			p.refuse(a, CheckRefused, "not written: "+b.Bad)
		}
		p.actions = append(p.actions, a)
	}
}

// listBitstream describes a list entry as a bitstream with no ZIP entry.
// From a signed list (signed: the run requires signatures) a resource
// whose entry gives no hash rsdump computes is Bad: what a server answers
// for it would be vouched for by nothing signed.
func listBitstream(n int, e resourcesync.URL, signed bool) *pkgread.Bitstream {
	b := &pkgread.Bitstream{N: n, URL: e, Length: -1}
	if e.MD != nil {
		if e.MD.Length != nil {
			b.Length = *e.MD.Length
		}
		want, err := resourcesync.ParseHash(e.MD.Hash)
		if err != nil {
			b.Bad = "hash attribute: " + err.Error()
		}
		b.Want = want
	}
	if _, ok := b.Want.Strongest(); signed && !ok && !b.Deleted() && b.Bad == "" {
		b.Bad = "its entry in the signed list carries no hash rsdump computes, so it " + ErrUnauthenticated.Error()
	}
	return b
}

// fetchAll stages every resource still needed, several at once.
func (p *pkgRun) fetchAll(ctx context.Context) error {
	var total int64
	for _, a := range p.actions {
		if p.needsFetch(a) {
			total += max(a.b.Length, 0)
		}
	}
	if total > 0 {
		finding.Send(p.u.opts.Events, finding.Planned{Bytes: total})
	}
	n := p.u.opts.Fetches
	if n <= 0 {
		n = defaultFetches
	}
	if p.fetches > 0 {
		n = p.fetches
	}
	st, err := p.u.dest.newStage()
	if err != nil {
		return fmt.Errorf("%s: staging: %w", p.u.dest.dir, err)
	}
	p.st = st
	// n workers take the actions in turn: a goroutine per resource grew
	// a fresh stack for each (4% of sync's CPU went to copying stacks on
	// a list of 2 KB files). Over HTTP/2 the requests are streams that
	// share a connection: the first answer that comes over it brings
	// streamsPerFetch times as many workers, as many requests in flight
	// as a connection each carries over HTTP/1.1.
	f := &fetcher{p: p}
	f.g, f.ctx = errgroup.WithContext(ctx)
	f.more = func() { f.start(min(n*(streamsPerFetch-1), len(p.actions)-n)) }
	f.start(min(n, len(p.actions)))
	return f.g.Wait()
}

// streamsPerFetch is how many requests a fetch (Options.Fetches) puts in
// flight at once over HTTP/2.
const streamsPerFetch = 8

// fetcher runs the workers of fetchAll.
type fetcher struct {
	p    *pkgRun
	g    *errgroup.Group
	ctx  context.Context
	next atomic.Int64 // the index of the next action to look at
	more func()       // starts the workers for HTTP/2
	grow sync.Once
}

func (f *fetcher) start(n int) {
	for range n {
		f.g.Go(f.work)
	}
}

// work fetches the actions it takes until none is left.
func (f *fetcher) work() error {
	for {
		i := int(f.next.Add(1) - 1)
		if i >= len(f.p.actions) {
			return nil
		}
		a := f.p.actions[i]
		if !f.p.needsFetch(a) {
			continue
		}
		h2, err := f.p.fetchOne(f.ctx, a)
		if err != nil {
			return err
		}
		if h2 {
			f.grow.Do(f.more)
		}
	}
}

func (p *pkgRun) needsFetch(a *action) bool {
	return !a.superseded && !a.failed && !a.present && !a.b.Deleted()
}

// fetchOne GETs one resource into a staging file, checking its length
// and hashes on the way; a resource that fails is refused and reported,
// and only a cancelled context or an unwritable tree is an error.
// h2 says the answer came over HTTP/2.
func (p *pkgRun) fetchOne(ctx context.Context, a *action) (h2 bool, err error) {
	f, err := p.st.create(a.target)
	if refused(err) {
		p.recMu.Lock()
		p.refuse(a, CheckRefused, "not written: "+err.Error())
		p.recMu.Unlock()
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("%s: staging %s: %w", p.u.dest.dir, a.target, err)
	}
	algs := a.b.Want.Known()
	if len(algs) == 0 {
		// Nothing to check against, but the written log gets a hash all
		// the same: without one, a later deleted change of this file could
		// not tell it is still the version rsdump wrote, and would refuse.
		algs = []string{digest.SHA256}
	}
	mh, _ := digest.NewMulti(algs...)
	pw := &progressWriter{events: p.u.opts.Events, left: max(a.b.Length, 0)}
	n, h2, ferr, werr := p.download(ctx, a, io.MultiWriter(f, mh, pw))
	pw.finish()
	check, why := "", ""
	switch {
	case werr != nil:
		f.Close()
		p.st.remove(a.target)
		return false, fmt.Errorf("%s: writing %s: %w", p.u.dest.dir, a.target, werr)
	case ctx.Err() != nil:
		f.Close()
		p.st.remove(a.target)
		return false, ctx.Err()
	case errors.Is(ferr, httpc.ErrTooLarge) || a.b.Length >= 0 && n > a.b.Length:
		check, why = finding.CheckLength, p.tooLong(a)
	case ferr != nil:
		check, why = finding.CheckRead, ferr.Error() // naming the URL, which the finding's Source does not
	case a.b.Length >= 0 && n < a.b.Length:
		check, why = finding.CheckLength, fmt.Sprintf("%d bytes, the list says %d", n, a.b.Length)
	default:
		if _, bad, _ := digest.Check(a.b.Want, mh.Sums()); len(bad) > 0 {
			check, why = finding.CheckHash, fmt.Sprintf("%s:%s, the list says %s:%s", bad[0].Alg, bad[0].Got, bad[0].Alg, bad[0].Want)
		}
	}
	if why != "" {
		f.Close()
		p.st.remove(a.target)
		p.recMu.Lock()
		p.refuse(a, check, "not written: "+why+"; the file at this name is left as it was")
		p.recMu.Unlock()
		return false, nil
	}
	// A resource fetched from its URI records no mode: one that replaces
	// a file keeps that file's (the mode a package gave it, say).
	if err := p.st.seal(f, a.b.URL.Lastmod, nil, a.keep); err != nil {
		p.st.remove(a.target)
		p.recMu.Lock()
		p.refuse(a, CheckRefused, "not written: "+err.Error())
		p.recMu.Unlock()
		return false, nil
	}
	p.stagedList(a, n, mh.Sums())
	return h2, nil
}

// openBitstream opens the bytes of a bitstream fetched on its own: from
// the run's source, else from its URI (retried as a document is, see
// httpc.DoRetry), refused past limit bytes; h2 says the answer came over
// HTTP/2.
func (p *pkgRun) openBitstream(ctx context.Context, a *action, limit int64) (rc io.ReadCloser, h2 bool, err error) {
	if p.source != nil {
		rc, err = p.source(ctx, a)
		return rc, false, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.b.URL.Loc, nil)
	if err != nil {
		return nil, false, fmt.Errorf("%s: %w", a.b.URL.Loc, err)
	}
	resp, rc, err := httpc.DoRetry(p.u.opts.Client, req, limit)
	if err != nil {
		return nil, false, err
	}
	return rc, resp.ProtoMajor == 2, nil
}

// download streams a resource to w: at most its length (resourceCap),
// and one byte more to tell a longer one. A response whose
// Content-Length is past it is refused before its first byte. ferr is
// the fetch's failure, werr the writer's; h2 says the answer came over
// HTTP/2.
func (p *pkgRun) download(ctx context.Context, a *action, w io.Writer) (n int64, h2 bool, ferr, werr error) {
	limit := p.resourceCap(a)
	rc, h2, err := p.openBitstream(ctx, a, limit)
	if err != nil {
		return 0, false, err, nil
	}
	defer rc.Close()
	ew := &iocount.Writer{W: w} // tells the writer's failure from the reader's
	bp := copyBufs.Get().(*[]byte)
	defer copyBufs.Put(bp)
	n, err = io.CopyBuffer(ew, io.LimitReader(rc, limit+1), *bp)
	if ew.Err != nil {
		return n, h2, nil, ew.Err
	}
	return n, h2, err, nil
}

// copyBufs are download's buffers: one a resource fetched at once, not
// one a resource (a list of 100,000 resources of 2 KB allocated 6.5 GB).
var copyBufs = sync.Pool{New: func() any { b := make([]byte, 64<<10); return &b }}

// resourceCap is the most a resource may send: the length its entry
// declares, else Options.MaxResourceSize, so that a server that never
// stops cannot fill the disk.
func (p *pkgRun) resourceCap(a *action) int64 {
	if a.b.Length >= 0 {
		return a.b.Length
	}
	if m := p.u.opts.MaxResourceSize; m > 0 {
		return m
	}
	return DefaultMaxResourceSize
}

// tooLong says why a resource that sent more than resourceCap is refused.
func (p *pkgRun) tooLong(a *action) string {
	if a.b.Length >= 0 {
		return fmt.Sprintf("%s: more than the list's %d bytes", a.b.URL.Loc, a.b.Length)
	}
	return fmt.Sprintf("%s: more than %d bytes, the most a resource may have when the list gives no length (--max-resource-size)", a.b.URL.Loc, p.resourceCap(a))
}

// stagedList records a verified staging file for commit; a resource whose
// list gives no hash rsdump can compute is kept, length checked, and
// reported unverified, as an unpacked bitstream is.
func (p *pkgRun) stagedList(a *action, n int64, sums digest.Set) {
	p.recMu.Lock()
	defer p.recMu.Unlock()
	a.staged, a.length = true, n
	p.recs = append(p.recs, deststate.Record{Path: a.target, Length: n, Hash: sums.String(), Mtime: a.b.URL.Lastmod})
	if len(a.b.Want.Known()) == 0 {
		p.rep.Report(finding.Finding{Severity: finding.Unverified, Code: finding.CheckHash, Source: p.ref.Loc, URI: a.b.URL.Loc, Path: a.target,
			Actual: pkgread.Describe(n, sums), Msg: "the list gives no hash rsdump can compute; only the length was checked"})
	}
}

// progressWriter counts a resource's bytes as finding.Progress, never more
// than its length, and the rest of the length when it is done.
type progressWriter struct {
	events func(finding.Event)
	left   int64
}

func (w *progressWriter) Write(b []byte) (int, error) {
	if n := min(int64(len(b)), w.left); n > 0 && w.events != nil {
		w.events(finding.Progress{Bytes: n})
		w.left -= n
	}
	return len(b), nil
}

func (w *progressWriter) finish() {
	if w.left > 0 && w.events != nil {
		w.events(finding.Progress{Bytes: w.left})
	}
	w.left = 0
}
