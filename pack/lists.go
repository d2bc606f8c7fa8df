package pack

import (
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/rsdump/rsdump/internal/sink"
	"github.com/rsdump/rsdump/resourcesync"
)

// listPartName names the n-th part of a list under its index:
// resourcelist-part00001.xml for resourcelist.xml.
func listPartName(name string, n int) string {
	return fmt.Sprintf("%s-part%05d.xml", strings.TrimSuffix(name, ".xml"), n)
}

// partWriters is how many parts of a list are written at once.
const partWriters = 4

// headerReserve is what a part's header may take at most: the
// declaration, the root element, rs:ln up and index and rs:md with two
// times. Entries are counted against the document size limit from there.
const headerReserve = 2048

// listWriter streams the entries of a Resource List or Change List into
// scratch files in the output directory, a part per 50,000 entries (or 50
// MB), and writes the document once the run is complete: the list itself,
// or a list index over its parts. The header waits for the end because
// completed (or until) is known only then; memory holds no entry.
type listWriter struct {
	o          *Options
	out        *output
	name       string
	capability string
	parts      []*listPart
	written    []string         // the files commit wrote, the document last
	docs       []listDoc        // see bodies
	inPlace    *resourcesync.MD // see writeInPlace
	several    bool             // the list has several parts, known from the start
}

// listPart is one part's entries on a scratch file, or in its document
// (writeInPlace).
type listPart struct {
	f    *os.File
	sum  *docSum // of the entries, as the body encoder writes them
	enc  *resourcesync.Encoder
	last time.Time // in a Change List or Change Dump: where its last entry's changes end
	// In place: the part's document, its body fed through pw to the
	// goroutine that writes and syncs it, which done gives the end of.
	af   sink.File
	pw   *chunkPipe
	done chan error
}

func newListWriter(o *Options, out *output, capability, name string) *listWriter {
	return &listWriter{o: o, out: out, name: name, capability: capability}
}

// add appends one entry, starting a new part when the current one is full.
func (l *listWriter) add(u resourcesync.URL) error {
	if err := l.put(&u, nil); err != nil {
		return err
	}
	l.parts[len(l.parts)-1].last = entryEnd(u)
	return nil
}

// addLine appends an entry as an earlier list of the same kind has it,
// encoded (resourcesync.Encoder.EncodeLine). Only a Resource List takes
// lines: its parts need no time of their last entry.
func (l *listWriter) addLine(line []byte) error { return l.put(nil, line) }

// put encodes u, or writes line, into the current part, or into a new
// one when the current one is full.
func (l *listWriter) put(u *resourcesync.URL, line []byte) error {
	if len(l.parts) == 0 {
		if err := l.startPart(); err != nil {
			return err
		}
	}
	encode := func() error {
		enc := l.parts[len(l.parts)-1].enc
		if line != nil {
			return enc.EncodeLine(line)
		}
		return enc.Encode(*u)
	}
	err := encode()
	if errors.Is(err, resourcesync.ErrLimit) {
		if err = l.startPart(); err != nil {
			return err
		}
		err = encode()
	}
	if err != nil {
		return fmt.Errorf("%s: %w", l.name, err)
	}
	return nil
}

func (l *listWriter) startPart() error {
	n := len(l.parts)
	if n > 0 {
		if err := l.parts[n-1].close(); err != nil {
			return err
		}
	}
	if l.inPlace != nil && (n > 0 || l.several) {
		// The list has parts: the first goes from its scratch file into
		// its document (when that was not known as it began), and the
		// others into theirs as they are written, beside the rest of the
		// run.
		if n == 1 && l.parts[0].f != nil {
			p := l.parts[0]
			name, h := l.partDoc(0)
			p.done = make(chan error, 1)
			go func() { p.done <- l.prepareDoc(p, name, h, p.f) }()
		}
		name, h := l.partDoc(n)
		pw := newChunkPipe()
		p := &listPart{pw: pw, done: make(chan error, 1)}
		p.sum = &docSum{w: pw, crc: crc32.New(crcTable)}
		p.enc = resourcesync.NewBodyEncoder(p.sum, resourcesync.URLSet, headerReserve)
		l.parts = append(l.parts, p)
		go func() {
			err := l.prepareDoc(p, name, h, pw)
			pw.closeRead(err) // the encoder's writes fail, if it failed
			p.done <- err
		}()
		return nil
	}
	f, err := os.CreateTemp(l.out.scratch, "."+l.name+".body*.tmp")
	if err != nil {
		return err
	}
	sum := &docSum{w: f, crc: crc32.New(crcTable)}
	l.parts = append(l.parts, &listPart{f: f, sum: sum, enc: resourcesync.NewBodyEncoder(sum, resourcesync.URLSet, headerReserve)})
	return nil
}

// chunkPipe carries a part's body from its encoder to the goroutine
// writing its document, as io.Pipe did, but a write is copied and queued
// (pipeChunks at most) rather than handed over: the encoder goes on while
// the document's goroutine writes the chunks before, where with io.Pipe
// each waited for the other.
type chunkPipe struct {
	c     chan []byte   // the chunks written, closed by the writer
	free  chan []byte   // chunks written out, to reuse
	done  chan struct{} // closed by the reader
	taken chan struct{} // closed once the reader has taken every chunk, or ended
	wonce sync.Once
	ronce sync.Once
	tonce sync.Once
	werr  error  // the writer's, set before c is closed
	rerr  error  // the reader's, set before done is closed
	cur   []byte // Read: the rest of the chunk being read
}

const pipeChunks = 4

func newChunkPipe() *chunkPipe {
	return &chunkPipe{c: make(chan []byte, pipeChunks), free: make(chan []byte, pipeChunks+1), done: make(chan struct{}), taken: make(chan struct{})}
}

// Write queues a copy of b; it fails once the reader has ended.
func (p *chunkPipe) Write(b []byte) (int, error) {
	select {
	case <-p.done:
		return 0, p.rerr
	default:
	}
	var buf []byte
	select {
	case buf = <-p.free:
	default:
	}
	buf = append(buf[:0], b...)
	select {
	case p.c <- buf:
		return len(b), nil
	case <-p.done:
		return 0, p.rerr
	}
}

// CloseWithError ends the writes: the reader gets err after the chunks
// written, or the end of the body when err is nil.
func (p *chunkPipe) CloseWithError(err error) error {
	p.wonce.Do(func() {
		p.werr = err
		close(p.c)
	})
	return nil
}

func (p *chunkPipe) Close() error { return p.CloseWithError(nil) }

// WriteTo writes the chunks to w as they come, until the writer closes.
func (p *chunkPipe) WriteTo(w io.Writer) (int64, error) {
	var n int64
	for b := range p.c {
		m, err := w.Write(b)
		n += int64(m)
		select {
		case p.free <- b:
		default:
		}
		if err != nil {
			return n, err
		}
	}
	p.allTaken()
	return n, p.werr
}

func (p *chunkPipe) allTaken() { p.tonce.Do(func() { close(p.taken) }) }

// wait waits until the reader has taken every chunk written, as io.Pipe's
// writer had when its last write returned, or has ended.
func (p *chunkPipe) wait() { <-p.taken }

func (p *chunkPipe) Read(b []byte) (int, error) {
	for len(p.cur) == 0 {
		c, ok := <-p.c
		if !ok {
			p.allTaken()
			if p.werr != nil {
				return 0, p.werr
			}
			return 0, io.EOF
		}
		p.cur = c
	}
	n := copy(b, p.cur)
	p.cur = p.cur[n:]
	return n, nil
}

// closeRead ends the reading: writes fail from then on, with err (or
// io.ErrClosedPipe).
func (p *chunkPipe) closeRead(err error) {
	if err == nil {
		err = io.ErrClosedPipe
	}
	p.ronce.Do(func() {
		p.rerr = err
		close(p.done)
	})
	p.allTaken()
}

// writeInPlace has the parts of a Resource List with several written
// into their documents as their entries come (the first waits on its
// scratch file until the list turns out to have several, unless several
// says so from the start: more entries than a part holds will come),
// each synced, and renamed by commit, which must then be given md: its
// times must be known before the entries. A list of one part is written
// by commit, as any other.
func (l *listWriter) writeInPlace(md resourcesync.MD, several bool) {
	md.Capability = l.capability
	l.inPlace, l.several = &md, several
}

// partDoc is the name and header of part i of a list with several.
func (l *listWriter) partDoc(i int) (string, resourcesync.Header) {
	return listPartName(l.name, i+1), l.header(resourcesync.URLSet, l.partMD(*l.inPlace, i), l.o.DumpURL+l.name)
}

// prepareDoc writes a part's document under its temporary name from its
// header and body, and syncs it; commit renames it.
func (l *listWriter) prepareDoc(p *listPart, name string, h resourcesync.Header, body io.Reader) error {
	l.out.note(name, h, nil)
	af, err := l.out.Create(l.out.ctx, name)
	if err != nil {
		return err
	}
	if s, ok := body.(io.Seeker); ok {
		_, err = s.Seek(0, io.SeekStart)
	}
	if err == nil {
		err = resourcesync.WriteDocument(copying(af), h, body)
	}
	if f, ok := af.(interface{ File() *os.File }); ok && err == nil {
		err = f.File().Sync()
	}
	if err != nil {
		af.Abort()
		return fmt.Errorf("%s: %w", name, err)
	}
	p.af = af
	return nil
}

// close ends a part's entries; one written in place then gets its
// closing tag, and close waits until its document has all of its body
// (or has failed; commit sees how).
func (p *listPart) close() error {
	err := p.enc.Close()
	if p.pw != nil {
		if err != nil {
			p.pw.CloseWithError(err)
		} else {
			p.pw.Close()
		}
		p.pw.wait()
	}
	return err
}

// commit writes the document with md's times (at and completed for a
// Resource List, from and until for a Change List) and removes the
// scratch files. With more than one part it writes the parts, then the
// index, last.
func (l *listWriter) commit(md resourcesync.MD) error {
	defer l.abort()
	if _, err := l.bodies(); err != nil {
		return err
	}
	md.Capability = l.capability
	if len(l.parts) == 0 {
		l.written = append(l.written, l.name)
		return l.writeDoc(l.name, l.header(resourcesync.URLSet, md, ""), strings.NewReader(""))
	}
	if err := l.parts[len(l.parts)-1].close(); err != nil {
		return err
	}
	if len(l.parts) == 1 && l.parts[0].f != nil {
		l.written = append(l.written, l.name)
		return l.writeDoc(l.name, l.header(resourcesync.URLSet, md, ""), l.parts[0].f)
	}
	if l.inPlace != nil {
		return l.commitInPlace(md)
	}
	// The parts are copied and synced a few at once, their syncs
	// overlapping; the index follows them all.
	var index []resourcesync.URL
	var g errgroup.Group
	g.SetLimit(partWriters)
	for i, p := range l.parts {
		name := listPartName(l.name, i+1)
		pmd := l.partMD(md, i)
		h := l.header(resourcesync.URLSet, pmd, l.o.DumpURL+l.name)
		l.written = append(l.written, name)
		g.Go(func() error { return l.writeDoc(name, h, p.f) })
		index = append(index, resourcesync.URL{Loc: l.o.DumpURL + name, MD: &resourcesync.MD{
			At: pmd.At, Completed: pmd.Completed, From: pmd.From, Until: pmd.Until,
		}})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	l.written = append(l.written, l.name)
	return encodeFile(l.out, l.name, l.header(resourcesync.SitemapIndex, md, ""), index)
}

// commitInPlace renames the parts writeInPlace wrote, in order, then
// writes the index.
func (l *listWriter) commitInPlace(md resourcesync.MD) error {
	if !md.At.Equal(l.inPlace.At) || !md.Completed.Equal(l.inPlace.Completed) {
		return fmt.Errorf("%s: committed with times other than those its parts were written with", l.name)
	}
	var index []resourcesync.URL
	for i, p := range l.parts {
		// Waited for once: abort must not wait again.
		err := <-p.done
		p.done = nil
		if err != nil {
			return err
		}
		name, h := l.partDoc(i)
		l.written = append(l.written, name)
		if err := p.af.Commit(); err != nil {
			return err
		}
		index = append(index, resourcesync.URL{Loc: l.o.DumpURL + name, MD: &resourcesync.MD{At: h.MD.At, Completed: h.MD.Completed}})
	}
	l.written = append(l.written, l.name)
	return encodeFile(l.out, l.name, l.header(resourcesync.SitemapIndex, md, ""), index)
}

// commitInto writes the entries as the next parts of a Change List
// Index or Change Dump Index, with md's from and until, and names them
// there; the index itself is written by commitIndex. It writes nothing
// without an entry.
func (l *listWriter) commitInto(md resourcesync.MD, x *changeIndex) error {
	defer l.abort()
	if len(l.parts) == 0 {
		return nil
	}
	md.Capability = l.capability
	if err := l.parts[len(l.parts)-1].enc.Close(); err != nil {
		return err
	}
	var g errgroup.Group
	g.SetLimit(partWriters)
	for i, p := range l.parts {
		name := x.partName(x.last + 1)
		pmd := l.partMD(md, i)
		h := l.header(resourcesync.URLSet, pmd, l.o.DumpURL+x.name)
		l.written = append(l.written, name)
		x.add(l.o, name, pmd)
		g.Go(func() error { return l.writeDoc(name, h, p.f) })
	}
	return g.Wait()
}

// partMD gives a part its own times: a Resource List's parts share the
// snapshot's; a Change List's or Change Dump's parts cover consecutive
// intervals, each from the end of the one before, so that together they
// cover the list's.
func (l *listWriter) partMD(md resourcesync.MD, i int) resourcesync.MD {
	if l.capability != resourcesync.CapChangeList && l.capability != resourcesync.CapChangeDump {
		return md
	}
	pmd := resourcesync.MD{Capability: md.Capability, From: md.From, Until: l.parts[i].last}
	if i > 0 {
		pmd.From = l.parts[i-1].last
	}
	if i == len(l.parts)-1 {
		pmd.Until = md.Until
	}
	return pmd
}

func (l *listWriter) header(kind resourcesync.Kind, md resourcesync.MD, index string) resourcesync.Header {
	h := resourcesync.Header{Kind: kind, MD: md, Links: []resourcesync.Link{{Rel: "up", Href: l.o.CapabilityList}}}
	if index != "" {
		h.Links = append(h.Links, resourcesync.Link{Rel: "index", Href: index})
	}
	return h
}

// writeDoc writes a document from its header and a part's body.
func (l *listWriter) writeDoc(name string, h resourcesync.Header, body io.ReadSeeker) error {
	l.out.note(name, h, nil)
	f, err := l.out.Create(l.out.ctx, name)
	if err != nil {
		return err
	}
	if _, err = body.Seek(0, io.SeekStart); err == nil {
		err = resourcesync.WriteDocument(copying(f), h, body)
	}
	if err != nil {
		f.Abort()
		return fmt.Errorf("%s: %w", name, err)
	}
	return f.Commit()
}

// copying is f, which copies a local file into itself in the kernel
// (copy_file_range) when it is a local file too: a list's scratch body
// goes into its document so, and the state's scratch file into the state.
func copying(f sink.File) io.Writer {
	if of, ok := f.(interface{ File() *os.File }); ok {
		return fileCopier{f, of.File()}
	}
	return f
}

type fileCopier struct {
	io.Writer
	f *os.File
}

func (c fileCopier) ReadFrom(r io.Reader) (int64, error) { return c.f.ReadFrom(r) }

// bodies are the documents of a Resource List, in order, each with the
// length and CRC of its entries: what commit writes, or wrote. Its last
// part is closed: nothing may be added.
func (l *listWriter) bodies() ([]listDoc, error) {
	if l.docs != nil {
		return l.docs, nil
	}
	if len(l.parts) == 0 {
		l.docs = []listDoc{{Name: l.name}}
		return l.docs, nil
	}
	if err := l.parts[len(l.parts)-1].close(); err != nil {
		return nil, err
	}
	docs := make([]listDoc, len(l.parts))
	for i, p := range l.parts {
		docs[i] = listDoc{Name: listPartName(l.name, i+1), Size: p.sum.n, CRC: p.sum.crc.Sum32()}
	}
	if len(docs) == 1 {
		docs[0].Name = l.name
	}
	l.docs = docs
	return docs, nil
}

// files are the documents commit wrote; none without a list.
func (l *listWriter) files() []string {
	if l == nil {
		return nil
	}
	return l.written
}

// abort removes the scratch files; the documents are never touched. A
// run with no list (a shard's) has nothing to remove.
func (l *listWriter) abort() {
	if l == nil {
		return
	}
	for _, p := range l.parts {
		if p.pw != nil {
			p.pw.CloseWithError(errors.New("list aborted"))
		}
		if p.done != nil {
			if <-p.done == nil {
				p.af.Abort()
			}
		}
		if p.f != nil {
			p.f.Close()
			os.Remove(p.f.Name())
		}
	}
	l.parts = nil
}

// listEntry is a manifest entry as a Resource List gives it: the same but
// for path, which only means something inside a package.
func listEntry(u resourcesync.URL) resourcesync.URL {
	if u.MD != nil {
		md := *u.MD
		md.Path = ""
		u.MD = &md
	}
	return u
}
