package unpack

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/rsdump/rsdump/deststate"
	"github.com/rsdump/rsdump/finding"
	"github.com/rsdump/rsdump/internal/digest"
)

// FileCheck is what CheckFile found of a file rsdump owns, against the
// record of the written log that says how rsdump wrote it.
type FileCheck struct {
	// Problem is "" when the file holds; otherwise the check it fails:
	// finding.CheckMissing (absent, or not a regular file),
	// finding.CheckLength, finding.CheckHash, or finding.CheckRead (it
	// could not be read; Err says why).
	Problem string
	// Size is the file's length; -1 when it is missing.
	Size int64
	// Hashed says whether its content was read: Found then holds the
	// sums of every algorithm the record carries that rsdump computes,
	// as a hash attribute ("sha-256:…").
	Hashed bool
	Found  string
	// Mismatch lists, for CheckHash, each algorithm whose sum differs.
	Mismatch []digest.Mismatch
	// Unverified says the record carries no hash rsdump can compute: only
	// the length was checked.
	Unverified bool
	// TimeOK says the file's mtime is the one rsdump gave it (to the
	// second), or the record gives none.
	TimeOK bool
	Err    error
}

// CheckFile checks the file rec describes in the tree root, the one check
// of a file rsdump owns that repair (sync's first step) and rsdump audit
// share: missing, then its length, then, when its mtime is not the one
// rsdump gave it or with hashAll, every hash the record carries, all
// computed in one read of the file through buf (a fresh buffer when nil).
// The error is for a file whose presence cannot be told (its directory
// unreadable); a file that cannot be read is a CheckRead problem.
func CheckFile(root *os.Root, rec deststate.Record, hashAll bool, buf []byte) (FileCheck, error) {
	c := FileCheck{Size: -1}
	fi, err := root.Lstat(rec.Path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		c.Problem = finding.CheckMissing
		return c, nil
	case err != nil:
		return c, err
	case !fi.Mode().IsRegular():
		c.Problem = finding.CheckMissing
		c.Err = fmt.Errorf("%s is not a regular file (%s)", rec.Path, fi.Mode().Type())
		return c, nil
	}
	c.Size = fi.Size()
	if c.Size != rec.Length {
		c.Problem = finding.CheckLength
		return c, nil
	}
	c.TimeOK = rec.Mtime.IsZero() || fi.ModTime().Unix() == rec.Mtime.Unix()
	want, _ := digest.Parse(rec.Hash)
	algs := want.Known()
	if c.Unverified = len(algs) == 0; c.Unverified || c.TimeOK && !hashAll {
		return c, nil
	}
	sums, err := hashFile(root, rec.Path, algs, buf)
	if err != nil {
		c.Problem, c.Err = finding.CheckRead, err
		return c, nil
	}
	c.Hashed, c.Found = true, sums.String()
	if _, bad, _ := digest.Check(want, sums); len(bad) > 0 {
		c.Problem, c.Mismatch = finding.CheckHash, bad
	}
	return c, nil
}

// hashFile reads rel once through every hash of algs.
func hashFile(root *os.Root, rel string, algs []string, buf []byte) (digest.Set, error) {
	f, err := root.Open(rel)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	mh, err := digest.NewMulti(algs...)
	if err != nil {
		return nil, err
	}
	if buf == nil {
		p := hashBufs.Get().(*[]byte)
		defer hashBufs.Put(p)
		buf = *p
	}
	if _, err := io.CopyBuffer(mh, onlyReader{f}, buf); err != nil {
		return nil, fmt.Errorf("%s: %w", rel, err)
	}
	return mh.Sums(), nil
}

// onlyReader hides a file's WriterTo, so that io.CopyBuffer reads
// through the buffer it is given, in reads of its size.
type onlyReader struct{ r io.Reader }

func (o onlyReader) Read(p []byte) (int, error) { return o.r.Read(p) }
