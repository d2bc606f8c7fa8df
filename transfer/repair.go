package transfer

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
)

// A file without piece hashes is checked only as a whole, so a single
// mirror serving bad bytes among good ones used to spoil every run, and
// the mismatch named no mirror. repair finds the culprit with the mirrors
// themselves. Each range is fetched a second time, from a mirror other
// than the one whose copy was written, and the two copies compared; where
// they disagree a third mirror, if there is one, settles the range by
// majority. Ranges still split (two mirrors) are settled by trying, for
// each mirror in the dispute, the file in which none of its disputed
// copies is used: the whole-file hash says which is right. The losers are
// dropped for the file, by name; when nothing matches, the error names
// the mirrors that disagreed and the bytes.
//
// Copies are compared through sha-256 of each range (never the file's own
// algorithm: a range hash only has to tell copies apart).

// opinion is one version of a range and the mirrors that served it.
type opinion struct {
	sum   [32]byte
	from  []int // mirror indexes
	votes int   // len(from), plus one for a copy of unknown origin (resumed)
}

// dispute is a range on which copies differ; cur is the version on disk.
type dispute struct {
	i    int
	ops  []opinion
	cur  int
	done bool // settled by majority
}

// needsRepair: the whole-file hash failed, nothing else can say which
// range is bad, and there are two mirrors to compare.
func (d *download) needsRepair(sum string) bool {
	return d.f.HashAlg != "" && sum != d.f.Hash && d.f.Pieces.Hashes == nil &&
		d.plen <= maxDupPiece && len(d.usable()) >= 2
}

// usable are the mirrors that take range requests for the file.
func (d *download) usable() []*mirror {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []*mirror
	for _, m := range d.mirrors {
		if m.alive() {
			out = append(out, m)
		}
	}
	return out
}

// repair returns the digest of the repaired file, or the mismatch error
// (after hashMismatch's cleanup) extended with what the mirrors did.
func (d *download) repair(ctx context.Context, sum string) (string, error) {
	all, err := d.secondOpinions(ctx)
	if err != nil {
		return "", err
	}
	if len(all) == 0 {
		return "", fmt.Errorf("%w; every range came the same from two mirrors", d.hashMismatch(sum))
	}
	if err := d.each(ctx, all, d.settle3); err != nil {
		return "", err
	}
	if sum, err = d.wholeDigest(); err != nil || sum == d.f.Hash {
		return sum, d.blame(all, err)
	}
	var open []*dispute
	for _, dp := range all {
		if !dp.done {
			open = append(open, dp)
		}
	}
	for _, x := range suspects(open) {
		ok, err := d.without(ctx, open, x)
		if err != nil {
			return "", err
		}
		if !ok {
			continue
		}
		if sum, err = d.wholeDigest(); err != nil || sum == d.f.Hash {
			return sum, d.blame(all, err)
		}
	}
	return "", fmt.Errorf("%w; %s", d.hashMismatch(sum), d.describe(open))
}

// each runs f on every dispute, a bounded number at a time.
func (d *download) each(ctx context.Context, dps []*dispute, f func(context.Context, *dispute, []*mirror) error) error {
	ms := d.usable()
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(d.repairWorkers(len(ms)))
	for _, dp := range dps {
		g.Go(func() error { return f(gctx, dp, ms) })
	}
	return g.Wait()
}

// repairWorkers bounds the ranges compared at once: two buffers each, at
// most 64 MiB in all.
func (d *download) repairWorkers(mirrors int) int {
	return max(1, min(d.g.opts.Connections, mirrors*d.g.opts.PerMirror, int((64<<20)/(2*d.plen))))
}

// secondOpinions compares every range on disk with a copy from another
// mirror and returns the ranges where they differ.
func (d *download) secondOpinions(ctx context.Context) ([]*dispute, error) {
	var mu sync.Mutex
	var out []*dispute
	all := make([]*dispute, d.n)
	for i := range all {
		all[i] = &dispute{i: i}
	}
	err := d.each(ctx, all, func(ctx context.Context, dp *dispute, ms []*mirror) error {
		differ, err := d.secondOpinion(ctx, dp, ms)
		if differ {
			mu.Lock()
			out = append(out, dp)
			mu.Unlock()
		}
		return err
	})
	slices.SortFunc(out, func(a, b *dispute) int { return a.i - b.i })
	return out, err
}

func (d *download) secondOpinion(ctx context.Context, dp *dispute, ms []*mirror) (bool, error) {
	off, end := d.span(dp.i)
	stored := make([]byte, end-off)
	if _, err := d.part.ReadAt(stored, off); err != nil {
		return false, fmt.Errorf("%s: %w", d.partPath, err)
	}
	d.mu.Lock()
	from := d.pieces[dp.i].from - 1
	d.mu.Unlock()
	mine := opinion{sum: sha256.Sum256(stored), votes: 1}
	if from >= 0 {
		mine.from = []int{from}
	}
	dp.ops = []opinion{mine}
	b := make([]byte, end-off)
	for k := range ms {
		m := ms[(dp.i+k)%len(ms)]
		if m.idx == from {
			continue
		}
		if err := d.fetchRange(ctx, m, dp.i, b); err != nil {
			if ctx.Err() != nil {
				return false, ctx.Err()
			}
			continue
		}
		if bytes.Equal(b, stored) {
			return false, nil
		}
		dp.ops = append(dp.ops, opinion{sum: sha256.Sum256(b), from: []int{m.idx}, votes: 1})
		return true, nil
	}
	return false, nil // no other mirror answered: nothing to compare
}

// settle3 asks the mirrors that have not yet given an opinion on a
// disputed range until one version has two votes and more than any
// other; that version is written if it is not already on disk.
func (d *download) settle3(ctx context.Context, dp *dispute, ms []*mirror) error {
	off, end := d.span(dp.i)
	b := make([]byte, end-off)
	for k := range ms {
		m := ms[(dp.i+k)%len(ms)]
		if dp.voted(m.idx) {
			continue
		}
		if err := d.fetchRange(ctx, m, dp.i, b); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			continue
		}
		j := dp.add(sha256.Sum256(b), m.idx)
		if !dp.leads(j) {
			continue
		}
		if j != dp.cur {
			if _, err := d.part.WriteAt(b, off); err != nil {
				return fmt.Errorf("%s: %w", d.partPath, err)
			}
			dp.cur = j
		}
		dp.done = true
		return nil
	}
	return nil
}

func (dp *dispute) voted(idx int) bool {
	for _, o := range dp.ops {
		if slices.Contains(o.from, idx) {
			return true
		}
	}
	return false
}

// add records idx's vote for the version with the given sum.
func (dp *dispute) add(sum [32]byte, idx int) int {
	for j := range dp.ops {
		if dp.ops[j].sum == sum {
			dp.ops[j].from = append(dp.ops[j].from, idx)
			dp.ops[j].votes++
			return j
		}
	}
	dp.ops = append(dp.ops, opinion{sum: sum, from: []int{idx}, votes: 1})
	return len(dp.ops) - 1
}

// leads: version j has a majority of two or more over every other.
func (dp *dispute) leads(j int) bool {
	if dp.ops[j].votes < 2 {
		return false
	}
	for k, o := range dp.ops {
		if k != j && o.votes >= dp.ops[j].votes {
			return false
		}
	}
	return true
}

// suspects are the mirrors with a say in the open disputes, those in the
// most disputes first.
func suspects(open []*dispute) []int {
	count := map[int]int{}
	var out []int
	for _, dp := range open {
		for _, o := range dp.ops {
			for _, idx := range o.from {
				if count[idx] == 0 {
					out = append(out, idx)
				}
				count[idx]++
			}
		}
	}
	slices.SortStableFunc(out, func(a, b int) int { return count[b] - count[a] })
	return out
}

// without puts on disk, for each open dispute, a version mirror x did not
// serve, fetched from a mirror that did; false if a range cannot be so
// fetched.
func (d *download) without(ctx context.Context, open []*dispute, x int) (bool, error) {
	for _, dp := range open {
		if !slices.Contains(dp.ops[dp.cur].from, x) {
			continue
		}
		ok, err := d.switchTo(ctx, dp, x)
		if err != nil || !ok {
			return false, err
		}
	}
	return true, nil
}

// switchTo writes another version of dp than x's, from one of its mirrors.
func (d *download) switchTo(ctx context.Context, dp *dispute, x int) (bool, error) {
	off, end := d.span(dp.i)
	b := make([]byte, end-off)
	for j, o := range dp.ops {
		if j == dp.cur || slices.Contains(o.from, x) {
			continue
		}
		for _, idx := range o.from {
			m := d.mirrors[idx]
			if err := d.fetchRange(ctx, m, dp.i, b); err != nil {
				if ctx.Err() != nil {
					return false, ctx.Err()
				}
				continue
			}
			if sha256.Sum256(b) != o.sum {
				continue // the mirror changed its mind
			}
			if _, err := d.part.WriteAt(b, off); err != nil {
				return false, fmt.Errorf("%s: %w", d.partPath, err)
			}
			dp.cur = j
			return true, nil
		}
	}
	return false, nil
}

// fetchRange reads range i from m into b, within the connection budget.
func (d *download) fetchRange(ctx context.Context, m *mirror, i int, b []byte) error {
	bg := d.g.budget
	if err := bg.acquire(ctx); err != nil {
		return err
	}
	defer bg.release()
	for {
		ch := bg.changed.wait()
		if bg.tryHost(m.host) {
			break
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-ch:
		}
	}
	defer bg.releaseHost(m.host)
	a := &attempt{piece: i, m: m, start: time.Now()}
	a.last.Store(a.start.UnixNano())
	a.ctx, a.cancel = context.WithCancelCause(ctx)
	defer a.cancel(nil)
	err := d.fetchInto(a, b)
	d.mu.Lock()
	d.res.Refetch++
	d.mu.Unlock()
	return err
}

// wholeDigest is the whole-file digest of the .part as it now is.
func (d *download) wholeDigest() (string, error) {
	h, err := newHash(d.f.HashAlg)
	if err != nil {
		return "", err
	}
	if _, err := io.Copy(h, io.NewSectionReader(d.part, 0, d.f.Size)); err != nil {
		return "", fmt.Errorf("%s: %w", d.partPath, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// blame drops, for the file, each mirror whose copy of a disputed range
// lost, naming the first such range; it returns err.
func (d *download) blame(all []*dispute, err error) error {
	if err != nil {
		return err
	}
	lost := map[int][]int{} // mirror → ranges it lost
	for _, dp := range all {
		for j, o := range dp.ops {
			if j == dp.cur {
				continue
			}
			for _, idx := range o.from {
				lost[idx] = append(lost[idx], dp.i)
			}
		}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, m := range d.mirrors {
		rs := lost[m.idx]
		if len(rs) == 0 {
			continue
		}
		m.bad += len(rs)
		off, end := d.span(rs[0])
		d.drop(m, fmt.Sprintf("its copy of %d range(s), first bytes %d-%d, disagreed with the other mirrors and the whole-file hash", len(rs), off, end-1))
	}
	return nil
}

// describe says which mirrors disagreed where, for the error.
func (d *download) describe(open []*dispute) string {
	if len(open) == 0 {
		return "no range could be compared between two mirrors"
	}
	var urls []string
	for _, idx := range suspects(open) {
		urls = append(urls, d.mirrors[idx].url)
	}
	slices.Sort(urls)
	off, end := d.span(open[0].i)
	more := ""
	if len(open) > 1 {
		more = fmt.Sprintf(" (and %d more ranges)", len(open)-1)
	}
	return fmt.Sprintf("mirrors %s disagree on bytes %d-%d%s, and no choice between their copies matches", strings.Join(urls, ", "), off, end-1, more)
}
