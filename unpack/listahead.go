package unpack

import (
	"context"
	"fmt"

	"github.com/rsdump/rsdump/resourcesync"
)

// A list's batches are staged on a goroutine of their own, one ahead:
// the next batch's resources are fetched while a batch's files are
// renamed into the tree, and a Resource List's first batch while the
// rest of the list is still read and surveyed (a list of 100,000
// resources took a second to survey with the server idle, and a tenth of
// a second to commit each batch with the server idle again). The tree
// changes only in the commits, in list order and one at a time, so
// staging ahead changes what lands nowhere but where a batch's file is on
// the path of a later batch's: that one is refused when it commits
// (lander) instead of when it is planned (checkPresent), as a file of the
// tree's own in the way always could be.
type stagedBatch struct {
	items  []listItem
	done   chan struct{} // closed when staged; p and err are then set
	p      *pkgRun
	err    error
	cancel context.CancelFunc
}

// stageAsync starts staging a batch (stageBatch) on a goroutine.
func (l *listRun) stageAsync(ctx context.Context, doc string, items []listItem, first, change bool) *stagedBatch {
	s := &stagedBatch{items: items, done: make(chan struct{})}
	ctx, s.cancel = context.WithCancel(ctx)
	go func() {
		defer close(s.done)
		s.p, s.err = l.stageBatch(ctx, doc, items, first, change)
	}()
	return s
}

// wait returns the batch's run once staged.
func (s *stagedBatch) wait() (*pkgRun, error) {
	<-s.done
	return s.p, s.err
}

// discard stops the batch's staging and removes what it staged.
func (s *stagedBatch) discard() {
	if s == nil {
		return
	}
	s.cancel()
	if p, _ := s.wait(); p != nil {
		p.close()
	}
}

// stage starts staging a batch of the document doc, first saying it is
// the document's first; the list's first batch may be staging already
// (earlyBatch).
func (l *listRun) stage(ctx context.Context, doc string, items []listItem, first bool) *stagedBatch {
	change := l.isChange()
	if e := l.takeEarly(); e != nil {
		if first && !change && sameItems(items, e.items) {
			return e
		}
		// Planned otherwise by the survey, which no list can do (a part's
		// capability is its index's, and the survey refuses as the early
		// batch did). Its findings and its package are counted already;
		// staged again, they would count twice: the run ends instead.
		e.discard()
		return failedBatch(fmt.Errorf("%s: the first batch staged during the survey is not the one the survey planned (a bug in rsdump)", doc))
	}
	return l.stageAsync(ctx, doc, items, first, change)
}

// failedBatch is a batch whose staging failed with err before it began.
func failedBatch(err error) *stagedBatch {
	s := &stagedBatch{done: make(chan struct{}), err: err, cancel: func() {}}
	close(s.done)
	return s
}

// earlyBatch gathers a Resource List's first batch while the list is
// read, to stage it before the survey ends. It can: in a Resource List
// the first entry of a target stands and every later one is refused, so
// whether an entry of the first batch is refused depends only on the
// entries before it, all in the batch. Nothing lands before the survey
// ends; a list that fails later in it leaves the tree as it was, the
// staged files removed with the run.
type earlyBatch struct {
	items  []listItem
	first  map[string]int64 // target → seq of its first entry
	doc    string
	staged *stagedBatch // once gathered
}

// collectEarly adds entry seq of document d, of target target ("" for
// none), to the early batch, and starts staging it once it holds
// listBatch entries. The batch begins at the list's first entry when the
// list lends itself to it: a Resource List, applied for real, not as a
// snapshot made the tree exactly (rebase), which removes files first, nor
// as a first run into a directory that holds files (guard), which any
// later entry may have refused before a resource is fetched.
func (l *listRun) collectEarly(ctx context.Context, d *resourcesync.Document, seq int64, u resourcesync.URL, target string) {
	if seq == 0 && d.Header.MD.Capability == resourcesync.CapResourceList && !l.u.opts.DryRun && l.u.rebase == nil && l.u.dest.root != nil && l.guard == nil {
		l.early = &earlyBatch{first: map[string]int64{}, doc: d.Loc}
	}
	e := l.early
	if e == nil || e.staged != nil || len(l.docs) != 1 {
		return
	}
	it := listItem{n: int(seq + 1), e: u}
	if target != "" {
		if of, ok := e.first[target]; ok {
			it.dup = l.duplicate(0, it.n, of)
		} else {
			e.first[target] = seq
		}
	}
	e.items = append(e.items, it)
	if len(e.items) == listBatch {
		l.startEarly(ctx)
	}
}

// startEarly starts staging the early batch, if it is being gathered.
func (l *listRun) startEarly(ctx context.Context) {
	if e := l.early; e != nil && e.staged == nil {
		e.staged = l.stageAsync(ctx, e.doc, e.items, true, false)
		e.first = nil
	}
}

// takeEarly returns the early batch's staging, if it started, and
// forgets the early batch.
func (l *listRun) takeEarly() *stagedBatch {
	e := l.early
	l.early = nil
	if e == nil {
		return nil
	}
	return e.staged
}

func sameItems(a, b []listItem) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].n != b[i].n || a[i].dup != b[i].dup || a[i].e.Loc != b[i].e.Loc {
			return false
		}
	}
	return true
}
