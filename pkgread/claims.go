package pkgread

import (
	"bufio"
	"encoding/binary"
	"errors"
	"hash/maphash"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/text/unicode/norm"

	"github.com/rsdump/rsdump/internal/digest"
	"github.com/rsdump/rsdump/internal/extsort"
)

// Claims finds the targets that two packages of one Resource Dump both
// carry with different content, which would make a restore keep whichever
// package came last, and the targets that differ only by case or Unicode
// normalisation (NFC against NFD), which collide on macOS and Windows.
//
// A dump has up to millions of bitstreams, so the table does not grow with
// them: a claim is a record of a few words (hashes of the target's name,
// of its folded name and of its content), sorted on disk by folded name in
// runs of claimRun records, and Resolve merges the runs and walks them in
// order, one folded name at a time. Only the claims that clash are kept.
// The names a finding needs are written to a file of their own as they
// come, and read back only for the claims that clash: the records hold no
// pointer, which spares the collector and the sort. Claim is safe for
// concurrent use.
type Claims struct {
	mu    sync.Mutex
	seed  maphash.Seed
	dir   string
	pkgs  []string
	sort  *extsort.Sorter[claimRec]
	names *namesFile  // nil until a claim brings names
	err   error       // the first error writing to disk; Resolve returns it
	late  *lateClaims // with KeepIndex: for the claims after Resolve
}

// claimRun is how many claims the table holds in memory before it writes
// them, sorted, to a run file: 2.5 MB.
var claimRun = 1 << 16

// claimsTempPattern names the table's files (runs, names, index); a
// killed run leaves them for whoever clears the directory.
const claimsTempPattern = ".rsdump-claims-*.tmp"

// claimRec is what is kept of one claim.
type claimRec struct {
	fold uint64 // hash of the folded target
	key  uint64 // hash of the exact target
	sum  uint64 // hash of its length and strongest hash
	pkg  int32
	n    int32
	off  int64 // of its names in the names file; -1 when it has none
}

// Target is one bitstream a package of the dump carries.
type Target struct {
	Pkg    int // the package's number from AddPackage
	N      int // the bitstream's entry number in the package's manifest
	Name   string
	Length int64
	Want   digest.Set
	// URI and Path are handed back by Resolve for the finding about a
	// clash; a caller that reports from its own copy leaves them empty.
	URI, Path string
}

// Claimed is a claim Resolve found to clash.
type Claimed struct {
	Pkg, N    int
	Package   string // the package's name, as AddPackage was given it
	URI, Path string
}

// ClashKind says how a target clashes with one claimed before.
type ClashKind int

// The kinds of clash.
const (
	NoClash      ClashKind = iota
	ClashContent           // another package carries the target with other content
	ClashFold              // another target differs from it only by case or Unicode normalisation
)

// Clash is a target's clash with another claim.
type Clash struct {
	Kind    ClashKind
	Package string // the other package
	Entry   int    // the other's manifest entry number; 0 when unknown
	// First is set on the first claim (in package and entry order) of a
	// target carried with other content elsewhere: the one the others
	// are reported against.
	First bool
}

// NewClaims returns an empty table that writes its runs in dir (the
// system's temporary directory when empty). Close removes them.
func NewClaims(dir string) *Claims {
	if dir == "" {
		dir = os.TempDir()
	}
	codec := extsort.Codec[claimRec]{Append: appendClaim, Read: readClaim}
	return &Claims{seed: maphash.MakeSeed(), dir: dir, sort: extsort.New(dir, claimsTempPattern, claimRun, byFold, codec).Total()}
}

// AddPackage registers a package by the name findings give it and returns
// its number for Claim.
func (c *Claims) AddPackage(name string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pkgs = append(c.pkgs, name)
	return len(c.pkgs) - 1
}

// Claim records that a package carries a target.
func (c *Claims) Claim(t Target) {
	r := c.record(t)
	c.mu.Lock()
	defer c.mu.Unlock()
	if t.URI != "" || t.Path != "" {
		r.off = c.writeNames(t.URI, t.Path)
	}
	if err := c.sort.Add(r); err != nil {
		c.fail(err)
	}
}

func (c *Claims) record(t Target) claimRec {
	return claimRec{
		fold: c.hash(fold(t.Name)), key: c.hash(t.Name), sum: c.hash(content(t.Length, t.Want)),
		pkg: int32(t.Pkg), n: int32(t.N), off: -1,
	}
}

func (c *Claims) fail(err error) {
	if c.err == nil {
		c.err = err
	}
}

// writeNames appends a claim's names to the names file and returns their
// offset.
func (c *Claims) writeNames(uri, path string) int64 {
	if c.names == nil && c.err == nil {
		var err error
		if c.names, err = newNamesFile(c.dir); err != nil {
			c.fail(err)
		}
	}
	if c.names == nil {
		return -1
	}
	off, err := c.names.write(uri, path)
	if err != nil {
		c.fail(err)
	}
	return off
}

// Close removes the table's files.
func (c *Claims) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closeFiles()
	if c.late != nil {
		c.late.close()
		c.late = nil
	}
}

func (c *Claims) closeFiles() {
	c.sort.Close()
	if c.names != nil {
		c.names.close()
		c.names = nil
	}
}

// Resolve calls fn for each claim that clashes, once every package has
// claimed its targets. When packages carry one target with different
// content, every claim of it clashes (the first with First set), so that
// a restore can refuse them all rather than keep whichever came last. Of
// names that fold to one, each name but the first claimed is reported
// once. The table is empty afterwards.
func (c *Claims) Resolve(fn func(Claimed, Clash)) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	defer c.closeFiles()
	if c.names != nil && c.err == nil {
		c.fail(c.names.flush())
	}
	if c.err != nil {
		return c.err
	}
	src, err := c.sort.Sorted()
	if err == nil && c.late != nil {
		err = c.late.open(c.dir)
	}
	if err != nil {
		return err
	}
	var group []claimRec // the claims of one folded name
	for {
		r, ok, err := src.Next()
		if err == nil {
			err = c.keep(&r, ok)
		}
		if err != nil {
			return err
		}
		if len(group) > 0 && (!ok || r.fold != group[0].fold) {
			c.resolve(group, fn)
			clear(group)
			group = group[:0]
		}
		if !ok {
			return nil
		}
		group = append(group, r)
	}
}

// resolve reports the clashes among the claims of one folded name, sorted
// by exact name, package and entry.
func (c *Claims) resolve(group []claimRec, fn func(Claimed, Clash)) {
	if len(group) == 1 {
		return
	}
	first := group[0] // the name claimed first, by package and entry
	for _, r := range group[1:] {
		if r.pkg < first.pkg || r.pkg == first.pkg && r.n < first.n {
			first = r
		}
	}
	for len(group) > 0 {
		i := 1
		for i < len(group) && group[i].key == group[0].key {
			i++
		}
		same := group[:i]
		group = group[i:]
		if c.contentClash(same, fn) || same[0].key == first.key {
			continue
		}
		fn(c.claimed(&same[0]), Clash{Kind: ClashFold, Package: c.pkgs[first.pkg], Entry: int(first.n)})
	}
}

// contentClash reports every claim of one exact name when two packages
// carry it with different content.
func (c *Claims) contentClash(same []claimRec, fn func(Claimed, Clash)) bool {
	var other *claimRec // a claim whose content differs from the first's
	multi := false
	for i := range same[1:] {
		r := &same[i+1]
		multi = multi || r.pkg != same[0].pkg
		if other == nil && r.sum != same[0].sum {
			other = r
		}
	}
	if other == nil || !multi {
		return false
	}
	for i := range same {
		o := other
		if same[i].sum != same[0].sum {
			o = &same[0]
		}
		fn(c.claimed(&same[i]), Clash{Kind: ClashContent, Package: c.pkgs[o.pkg], Entry: int(o.n), First: i == 0})
	}
	return true
}

func (c *Claims) claimed(r *claimRec) Claimed {
	cl := Claimed{Pkg: int(r.pkg), N: int(r.n), Package: c.pkgs[r.pkg]}
	if r.off >= 0 && c.names != nil {
		var err error
		if cl.URI, cl.Path, err = c.names.read(r.off); err != nil {
			c.fail(err)
		}
	}
	return cl
}

// byFold orders claims by folded name, then exact name, then package and
// entry, so that Resolve meets the claims of one folded name together and
// the first claim of each name first.
func byFold(a, b *claimRec) int {
	switch {
	case a.fold != b.fold:
		return cmpU64(a.fold, b.fold)
	case a.key != b.key:
		return cmpU64(a.key, b.key)
	case a.pkg != b.pkg:
		return int(a.pkg) - int(b.pkg)
	}
	return int(a.n) - int(b.n)
}

func cmpU64(a, b uint64) int {
	if a < b {
		return -1
	}
	return 1
}

const claimSize = 3*8 + 2*4 + 8

func appendClaim(b []byte, r *claimRec) []byte {
	b = binary.LittleEndian.AppendUint64(b, r.fold)
	b = binary.LittleEndian.AppendUint64(b, r.key)
	b = binary.LittleEndian.AppendUint64(b, r.sum)
	b = binary.LittleEndian.AppendUint32(b, uint32(r.pkg))
	b = binary.LittleEndian.AppendUint32(b, uint32(r.n))
	return binary.LittleEndian.AppendUint64(b, uint64(r.off))
}

func readClaim(br *bufio.Reader) (claimRec, error) {
	var f [claimSize]byte
	if _, err := io.ReadFull(br, f[:]); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return claimRec{}, errors.New("truncated claim")
		}
		return claimRec{}, err // io.EOF at the end of the run
	}
	return decodeClaim(&f), nil
}

func decodeClaim(f *[claimSize]byte) claimRec {
	le := binary.LittleEndian
	return claimRec{
		fold: le.Uint64(f[0:]), key: le.Uint64(f[8:]), sum: le.Uint64(f[16:]),
		pkg: int32(le.Uint32(f[24:])), n: int32(le.Uint32(f[28:])), off: int64(le.Uint64(f[32:])),
	}
}

// namesFile holds the names of the claims, each pair as two 32-bit
// lengths and the bytes.
type namesFile struct {
	f   *os.File
	w   *bufio.Writer
	off int64
}

func newNamesFile(dir string) (*namesFile, error) {
	f, err := os.CreateTemp(dir, claimsTempPattern)
	if err != nil {
		return nil, err
	}
	return &namesFile{f: f, w: bufio.NewWriterSize(f, 64<<10)}, nil
}

func (nf *namesFile) write(uri, path string) (int64, error) {
	off := nf.off
	var b [8]byte
	binary.LittleEndian.PutUint32(b[:], uint32(len(uri)))
	binary.LittleEndian.PutUint32(b[4:], uint32(len(path)))
	nf.w.Write(b[:])
	nf.w.WriteString(uri)
	_, err := nf.w.WriteString(path)
	nf.off += int64(len(b) + len(uri) + len(path))
	return off, err
}

func (nf *namesFile) flush() error { return nf.w.Flush() }

func (nf *namesFile) read(off int64) (uri, path string, err error) {
	var b [8]byte
	if _, err := nf.f.ReadAt(b[:], off); err != nil {
		return "", "", err
	}
	nu, np := binary.LittleEndian.Uint32(b[:]), binary.LittleEndian.Uint32(b[4:])
	buf := make([]byte, int(nu)+int(np))
	if _, err := nf.f.ReadAt(buf, off+8); err != nil {
		return "", "", err
	}
	return string(buf[:nu]), string(buf[nu:]), nil
}

func (nf *namesFile) close() {
	nf.f.Close()
	os.Remove(nf.f.Name())
}

func (c *Claims) hash(s string) uint64 { return maphash.String(c.seed, s) }

// content identifies a bitstream's content by its length and strongest
// hash, or all its hashes when rsdump knows none of them.
func content(length int64, want digest.Set) string {
	var tok string
	if s, ok := want.Strongest(); ok {
		tok = s.String()
	} else {
		tok = want.String()
	}
	return strconv.FormatInt(length, 10) + " " + strings.ToLower(tok)
}

// fold is the form two names share when macOS or Windows would take them
// for one file: NFC, lower case.
func fold(s string) string { return strings.ToLower(norm.NFC.String(s)) }

// Message describes a clash for a finding about the target.
func (cl Clash) Message() string {
	other := cl.Package
	if cl.Entry > 0 {
		other = "entry " + strconv.Itoa(cl.Entry) + " of " + cl.Package
	}
	switch cl.Kind {
	case ClashContent:
		return other + " carries the same target with other content; which one a restore keeps would be undefined"
	case ClashFold:
		return "differs only by case or Unicode normalisation from a target of " + other + "; the two collide on macOS and Windows"
	}
	return ""
}
