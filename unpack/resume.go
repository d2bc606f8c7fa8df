package unpack

import (
	"bufio"
	"encoding/json"
	"os"
	"path"
	"path/filepath"

	"github.com/rsdump/rsdump/deststate"
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
	f    *os.File
	w    *bufio.Writer
	prev map[string]stagedLine // what an earlier run staged
}

// openJournal opens the journal in dir (absolute) for appending, with
// what earlier runs wrote in it. A line that cannot be read ends what is
// taken from it (a run killed mid-line).
func openJournal(dir string) (*journal, error) {
	name := filepath.Join(dir, journalName)
	j := &journal{prev: map[string]stagedLine{}}
	if f, err := os.Open(name); err == nil {
		dec := json.NewDecoder(bufio.NewReader(f))
		for {
			var l stagedLine
			if dec.Decode(&l) != nil {
				break
			}
			j.prev[l.Target] = l
		}
		f.Close()
	}
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	j.f, j.w = f, bufio.NewWriterSize(f, 4096)
	return j, nil
}

// add records a bitstream staged whole. Written through at once: a run
// killed after it keeps the bitstream.
func (j *journal) add(l stagedLine) error {
	b, _ := json.Marshal(l)
	j.w.Write(append(b, '\n'))
	return j.w.Flush()
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
	if p.st, err = p.u.dest.keptStage(path.Join(filepath.ToSlash(rel), "stage")); err != nil {
		return err
	}
	p.journal, err = openJournal(p.src.keepDir)
	return err
}

// restaged reports whether an earlier run staged a's bitstream whole, as
// its staged file, hashed now, shows; if so a counts as staged. A staged
// file the journal does not vouch for (a run killed while writing it) is
// removed, to be staged again.
func (p *pkgRun) restaged(a *action) bool {
	if p.journal == nil {
		return false
	}
	rel := path.Join(p.st.name, a.target)
	l, ok := p.journal.prev[a.target]
	if !ok || l.Length != a.b.Length {
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
