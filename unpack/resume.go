package unpack

import (
	"archive/zip"
	"bufio"
	"encoding/json"
	"io"
	"os"
	"path"
	"path/filepath"

	"github.com/rsdump/rsdump/deststate"
	"github.com/rsdump/rsdump/internal/appendlog"
	"github.com/rsdump/rsdump/internal/digest"
	"github.com/rsdump/rsdump/pkgread"
)

// A remote package is held in memory while it downloads, never written
// to the disk (pkgfetch.Remote.Stream): what a killed sync keeps of it is
// what it staged. So the staging directory of a package whose download
// resumes (Options.ResumeDownloads) lives in that download's own cache
// directory, which stays until the package is applied, with a journal of
// the bitstreams staged whole: a line each, written once the bitstream
// matched the manifest's hashes and was sealed. The next run stages
// again only what the journal does not name; a named one counts once its
// staged file, hashed again, matches the (new) manifest's hashes: the
// journal is a hint, never proof. The engine's checkpoint carries the
// package's hash over what was fetched before, so the package is still
// checked whole.

// journalName is the journal's name in the package's cache directory.
const journalName = "staged.jsonl"

// stagedLine is a bitstream the journal names: its target, what it was
// checked against, and where its entry lies in the package, for the
// layout check of a run that does not read it again.
type stagedLine struct {
	Target string `json:"target"`
	Length int64  `json:"length"`
	Hash   string `json:"hash"`
	Start  int64  `json:"start"`
	End    int64  `json:"end"`
}

// journal is a kept stage's record; nil for a stage of one run.
type journal struct {
	f     *os.File
	prev  map[string]stagedLine // what an earlier run staged of this package
	fresh bool                  // no earlier run's: the stage was empty
}

// journalHead is the journal's first line: the package it is of. A
// journal of another package (the same URL, other bytes) is not used,
// and the stage it describes is emptied.
type journalHead struct {
	Package string `json:"package"`
	Length  int64  `json:"length"`
	Hash    string `json:"hash"`
}

// openJournal opens the journal in dir (absolute) for appending, with
// what earlier runs wrote in it for the package head names; fresh says
// it was of another package, or none, and starts over. A line that
// cannot be read (a run killed mid-line) is skipped.
func openJournal(dir string, head journalHead) (j *journal, fresh bool, err error) {
	name := filepath.Join(dir, journalName)
	j = &journal{prev: map[string]stagedLine{}}
	fresh = true
	if f, err := os.Open(name); err == nil {
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		var h journalHead
		if sc.Scan() && json.Unmarshal(sc.Bytes(), &h) == nil && h == head {
			fresh = false
			for sc.Scan() {
				var l stagedLine
				if json.Unmarshal(sc.Bytes(), &l) == nil && l.Target != "" {
					j.prev[l.Target] = l
				}
			}
		}
		f.Close()
	}
	trunc := 0
	if fresh {
		trunc = os.O_TRUNC
	}
	// A line a killed run cut short is ended, so that the lines this run
	// adds are read back by the next (appendlog).
	if j.f, err = appendlog.Open(appendlog.OS, name, trunc, 0o600); err != nil {
		return nil, false, err
	}
	if fresh {
		b, _ := json.Marshal(head)
		if _, err := j.f.Write(append(b, '\n')); err != nil {
			j.f.Close()
			return nil, false, err
		}
	}
	return j, fresh, nil
}

// add records a bitstream staged whole, in one write: a run killed after
// it keeps the bitstream.
func (j *journal) add(l stagedLine) error {
	b, _ := json.Marshal(l)
	_, err := j.f.Write(append(b, '\n'))
	return err
}

func (j *journal) close() {
	if j != nil {
		j.f.Close()
	}
}

// openStage makes the package's staging directory: one of this run's,
// or, when its download is kept across runs, the kept one in the
// download's directory with its journal.
func (p *pkgRun) openStage() error {
	if p.src.keepDir == "" {
		st, err := p.u.dest.newStage()
		p.st = st
		return err
	}
	rel, err := filepath.Rel(p.u.dest.dir, p.src.keepDir)
	if err != nil || !filepath.IsLocal(rel) {
		st, err := p.u.dest.newStage() // a cache outside the tree: nothing is kept
		p.st = st
		return err
	}
	name := path.Join(filepath.ToSlash(rel), "stage")
	head := journalHead{Package: p.ref.Loc, Length: p.src.size, Hash: p.ref.Want.String()}
	j, fresh, err := openJournal(p.src.keepDir, head)
	if err != nil {
		return err
	}
	p.journal, j.fresh = j, fresh
	if fresh {
		p.u.dest.root.RemoveAll(name) // another package's, or no record of what it holds
	}
	p.st, err = p.u.dest.keptStage(name)
	return err
}

// restaged reports whether an earlier run staged a's bitstream whole, as
// its staged file, hashed now, shows; if so a counts as staged. A staged
// file the journal does not vouch for (a run killed while writing it) is
// removed, to be staged again.
func (p *pkgRun) restaged(a *action) bool {
	if p.journal == nil || p.journal.fresh {
		return false // nothing staged before: no file to look at or remove
	}
	rel := path.Join(p.st.name, a.target)
	l, ok := p.journal.prev[a.target]
	if !ok || l.Length != a.b.Length || l.Start != p.pkg.HeaderOffset(a.b) || l.End <= l.Start {
		p.st.root.Remove(a.target)
		return false
	}
	fi, err := p.u.dest.root.Lstat(rel)
	if err != nil || !fi.Mode().IsRegular() {
		return false
	}
	match, sums, err := p.u.dest.matches(rel, fi, a.b.Length, a.b.Want)
	if err != nil || !match {
		p.st.root.Remove(a.target)
		return false
	}
	p.pkg.KnownSpan(a.b, l.Start, l.End)
	a.staged, a.length = true, fi.Size()
	p.recs = append(p.recs, deststate.Record{Path: a.target, Length: fi.Size(), Hash: sums.String(), Mtime: a.b.URL.Lastmod})
	return true
}

// journalStaged records a bitstream just staged, when the stage is kept.
func (p *pkgRun) journalStaged(a *action, sums digest.Set) error {
	if p.journal == nil {
		return nil
	}
	start, end, _ := p.pkg.Span(a.b)
	return p.journal.add(stagedLine{Target: a.target, Length: a.length, Hash: sums.String(), Start: start, End: end})
}

// releasePoints gives, for each bitstream in the order stage reads them,
// the offset before which no bitstream still to be read lies: the
// package's bytes the reader can let go of before it reads that one.
func releasePoints(pkg *pkgread.Package, order []*pkgread.Bitstream) []int64 {
	out := make([]int64, len(order))
	low := int64(-1)
	for i := len(order) - 1; i >= 0; i-- {
		off := pkg.HeaderOffset(order[i])
		if off < 0 {
			off = 0 // unknown: keep everything before it
		}
		if low < 0 || off < low {
			low = off
		}
		out[i] = low
	}
	return out
}

// held is what a pkgRun keeps to let go of a held package's bytes as it
// reads them (see releaseTo).
type held struct {
	released  int64       // bytes before it are let go
	after     int64       // no bitstream read after the current one lies before it
	others    []*zip.File // the package's entries that are no bitstream's, in file order
	otherOff  []int64     // where each of them starts
	nextOther int         // the first of them not yet visited
	busy      bool        // in releaseTo: reads it makes release nothing
}

// readSlack is how far behind its latest read a held package is kept:
// pkgread's read-ahead buffer (1 MiB) and a little more, for the few
// bytes archive/zip reads again.
const readSlack = 2 << 20

// releaseTo lets the held package's download go of the bytes before off,
// once pkgread has what CheckLayout needs of the entries that are no
// bitstream's and start before it (their spans, a directory's local
// header): they are not read otherwise, and their bytes would be gone.
func (p *pkgRun) releaseTo(off int64) {
	if p.src.release == nil || off <= p.released || p.busy {
		return
	}
	p.busy = true
	for p.nextOther < len(p.others) && p.otherOff[p.nextOther] < off {
		f := p.others[p.nextOther]
		p.nextOther++
		p.pkg.Visit(f)
	}
	p.busy = false
	p.released = off
	p.src.release(off)
}

// releasing is a held package as pkgread reads it: a read inside a
// bitstream lets go of what lies readSlack behind it (and before any
// bitstream still to come), so that a bitstream larger than the
// download's window neither holds all of itself in memory nor waits on
// one request at a time.
type releasing struct {
	io.ReaderAt
	p *pkgRun
}

func (r *releasing) ReadAt(b []byte, off int64) (int, error) {
	n, err := r.ReaderAt.ReadAt(b, off)
	if p := r.p; p.after > 0 {
		p.releaseTo(min(p.after, off-readSlack))
	}
	return n, err
}
