package pack

import (
	"bufio"
	"bytes"
	"hash"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// A state names the documents of the Resource List written with it
// (stateHead.List), each by the length and CRC-32C of its entry lines,
// so that a --changes
// run whose baseline is that state can copy the entry lines of the files
// that did not change from those documents rather than encoding the
// entries again: the encoding was most of the cost of a run that finds
// little changed. The n-th entry of the list is the state's n-th file,
// since both were written from the same files in the same order. The
// list is written before the state, so that a run killed in between
// leaves a state that does not describe the documents there; a list
// changed since, by a run or by hand, no longer matches either: then
// every entry is encoded, as a run does without such a state (a state of
// rsdump before this, or another baseline).

// listDoc is a document of a Resource List, by its entries as written:
// the lines between its header and its closing tag.
type listDoc struct {
	Name string `json:"name"`
	Size int64  `json:"entry_bytes"`
	CRC  uint32 `json:"entry_crc32c"`
}

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// docSum counts and sums what is written through it.
type docSum struct {
	w   io.Writer
	crc hash.Hash32
	n   int64
}

func (d *docSum) Write(p []byte) (int, error) {
	n, err := d.w.Write(p)
	d.crc.Write(p[:n])
	d.n += int64(n)
	return n, err
}

// oldList reads the entry lines of the Resource List a state baseline
// names, in order: the n-th is the entry of the baseline's n-th file.
type oldList struct {
	dir  string
	base []byte // the base URL
	docs []listDoc
	f    *os.File
	br   *bufio.Reader
	n    int64  // entry lines read
	line []byte // the last of them
	done bool   // the lines ran out or did not fit: no more are given
}

// checkOldList starts checking, beside the walk, that the documents the
// state baseline names are in the output as it wrote them; the Resource
// List's goroutine takes the result (oldList.wait). It checks nothing for
// another kind of baseline, an object store, or a base URL whose <loc>
// the encoder escapes.
// A run that ends before it takes the result closes stop: the check
// ends then, and the run waits for it.
func (r *run) checkOldList(stop <-chan struct{}) chan *oldList {
	b := r.chg.base
	if r.out.dir == "" || len(b.list) == 0 || strings.ContainsAny(r.opts.BaseURL, `&<>"'`) {
		return nil
	}
	c := make(chan *oldList, 1)
	o := &oldList{dir: r.out.dir, base: []byte(r.opts.BaseURL), docs: b.list}
	go func() {
		if o.check(stop) {
			c <- o
		}
		close(c)
	}()
	return c
}

// check reads the documents whole: the entry lines of each must have
// the length and CRC the state gives. It gives up when stop is closed.
func (o *oldList) check(stop <-chan struct{}) bool {
	for _, d := range o.docs {
		select {
		case <-stop:
			return false
		default:
		}
		f, err := os.Open(o.path(d))
		if err != nil {
			return false
		}
		br := bufio.NewReaderSize(f, 256<<10)
		crc, n := uint32(0), int64(0)
		for {
			line, err := br.ReadSlice('\n')
			if err != nil {
				if err != io.EOF || len(line) > 0 {
					n = -1 // a line too long for the buffer, or cut short
				}
				break
			}
			if bytes.HasPrefix(line, urlStart) {
				crc, n = crc32.Update(crc, crcTable, line), n+int64(len(line))
			}
		}
		f.Close()
		if n != d.Size || crc != d.CRC {
			return false
		}
	}
	return true
}

// waitOldList is the result of checkOldList: nil when there is no list
// to copy from.
func waitOldList(c chan *oldList) *oldList {
	if c == nil {
		return nil
	}
	return <-c
}

func (o *oldList) path(d listDoc) string { return filepath.Join(o.dir, filepath.FromSlash(d.Name)) }

var urlStart = []byte("<url><loc>")

// lineFor returns the k-th entry line (from 1) if it is the entry of rel,
// or nil: then the entry is encoded. k grows from call to call; 0 asks
// for no line.
func (o *oldList) lineFor(k int64, rel []byte) []byte {
	if o == nil || o.done || k == 0 || k < o.n {
		return nil
	}
	for o.n < k {
		if !o.next() {
			o.close()
			return nil
		}
	}
	// A check of what check already made sure of: the line is the entry
	// of rel; another is encoded.
	if !o.isEntry(rel) {
		return nil
	}
	return o.line
}

// isEntry reports whether the last line read is the entry of rel, whose
// <loc> is the base URL and rel when rel needs no escape (LocFor).
func (o *oldList) isEntry(rel []byte) bool {
	rest, _ := bytes.CutPrefix(o.line, urlStart)
	rest, ok := bytes.CutPrefix(rest, o.base)
	return ok && len(rest) >= len(rel)+6 && bytes.Equal(rest[:len(rel)], rel) && string(rest[len(rel):len(rel)+6]) == "</loc>"
}

// next reads the next entry line, opening the next document when one
// ends; false when none is left or a line does not fit the buffer.
func (o *oldList) next() bool {
	for {
		if o.br == nil {
			if len(o.docs) == 0 {
				return false
			}
			f, err := os.Open(o.path(o.docs[0]))
			if err != nil {
				return false
			}
			o.docs = o.docs[1:]
			o.f, o.br = f, bufio.NewReaderSize(f, 256<<10)
		}
		line, err := o.br.ReadSlice('\n')
		if err != nil {
			if len(line) > 0 {
				return false // a line cut short, or too long for the buffer
			}
			o.f.Close()
			o.f, o.br = nil, nil
			continue
		}
		if bytes.HasPrefix(line, urlStart) {
			o.line, o.n = line, o.n+1
			return true
		}
	}
}

func (o *oldList) close() {
	if o == nil {
		return
	}
	o.done = true
	if o.f != nil {
		o.f.Close()
		o.f, o.br = nil, nil
	}
}
