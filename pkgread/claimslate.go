package pkgread

import (
	"bufio"
	"os"
)

// KeepIndex makes Resolve keep every claim, sorted by folded name, in a
// file that Late searches: for a caller with packages whose targets could
// not be claimed before Resolve (a remote package without a detached
// manifest, claimed as it is unpacked). Call it before Resolve.
func (c *Claims) KeepIndex() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.late = &lateClaims{byFold: map[uint64][]claimRec{}}
}

// Late checks a target claimed after Resolve against every claim before
// it and against the other late ones, and returns its clash: another
// package carries it with other content, or another name folds to it.
// Late claims are kept in memory: their number is the entries of the
// packages that could not be read before.
func (c *Claims) Late(t Target) Clash {
	r := c.record(t)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.late == nil {
		return Clash{}
	}
	others, err := c.late.search(r.fold)
	if err != nil {
		c.fail(err)
	}
	others = append(others, c.late.byFold[r.fold]...)
	c.late.byFold[r.fold] = append(c.late.byFold[r.fold], r)
	return c.worst(r, others)
}

// keep writes a claim Resolve meets to the index Late searches, and ends
// the index when there are no more (ok false).
func (c *Claims) keep(r *claimRec, ok bool) error {
	switch {
	case c.late == nil:
		return nil
	case ok:
		return c.late.index(r)
	}
	return c.late.indexed()
}

// worst is the clash of r with others that matters most: other content
// for the same name, then another name.
func (c *Claims) worst(r claimRec, others []claimRec) Clash {
	var out Clash
	for _, o := range others {
		switch {
		case o.key == r.key && o.sum != r.sum && o.pkg != r.pkg:
			return Clash{Kind: ClashContent, Package: c.pkgs[o.pkg], Entry: int(o.n)}
		case o.key != r.key && out.Kind == NoClash:
			out = Clash{Kind: ClashFold, Package: c.pkgs[o.pkg], Entry: int(o.n)}
		}
	}
	return out
}

// lateClaims is the sorted index of the claims Resolve walked, and the
// claims made since.
type lateClaims struct {
	f      *os.File
	w      *bufio.Writer
	n      int64 // records in f
	byFold map[uint64][]claimRec
}

// open creates the index file in dir.
func (l *lateClaims) open(dir string) error {
	f, err := os.CreateTemp(dir, claimsTempPattern)
	if err != nil {
		return err
	}
	l.f, l.w = f, bufio.NewWriterSize(f, 64<<10)
	return nil
}

// index appends a claim to the index, in the order Resolve meets them.
func (l *lateClaims) index(r *claimRec) error {
	l.n++
	_, err := l.w.Write(appendClaim(nil, r))
	return err
}

// indexed ends the index.
func (l *lateClaims) indexed() error {
	if l.w == nil {
		return nil
	}
	return l.w.Flush()
}

// search returns the indexed claims of one folded name: a binary search
// over the fixed-size records.
func (l *lateClaims) search(fold uint64) ([]claimRec, error) {
	if l.f == nil {
		return nil, nil // Resolve failed, and said so
	}
	lo, hi := int64(0), l.n
	for lo < hi {
		mid := (lo + hi) / 2
		r, err := l.at(mid)
		if err != nil {
			return nil, err
		}
		if r.fold < fold {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	var out []claimRec
	for i := lo; i < l.n; i++ {
		r, err := l.at(i)
		if err != nil || r.fold != fold {
			return out, err
		}
		out = append(out, r)
	}
	return out, nil
}

func (l *lateClaims) at(i int64) (claimRec, error) {
	var b [claimSize]byte
	if _, err := l.f.ReadAt(b[:], i*claimSize); err != nil {
		return claimRec{}, err
	}
	return decodeClaim(&b), nil
}

func (l *lateClaims) close() {
	if l.f != nil {
		l.f.Close()
		os.Remove(l.f.Name())
	}
}
