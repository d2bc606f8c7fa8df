package pkgread

import (
	"archive/zip"
	"bytes"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/rsdump/rsdump/finding"
	"github.com/rsdump/rsdump/internal/digest"
	"github.com/rsdump/rsdump/resourcesync"
)

// ManifestName is the manifest's entry name, at the top level (§11.2).
const ManifestName = "manifest.xml"

// DefaultMaxRatio bounds how much an entry may expand. Deflate cannot
// exceed 1032:1, so no honest deflated entry is refused; an entry that
// claims or reaches more is a zip bomb or a lie about its sizes.
const DefaultMaxRatio = 1100

// ErrRejected is wrapped by the error OpenPackage or LoadDump returns when
// a package or document cannot be used at all: its findings have been
// reported already.
var ErrRejected = errors.New("rejected")

// Limits bound what reading a package may cost.
type Limits struct {
	// MaxRatio is the largest inflated/compressed size ratio accepted for
	// an entry; 0 means DefaultMaxRatio.
	MaxRatio float64
}

func (l Limits) ratio() float64 {
	if l.MaxRatio <= 0 {
		return DefaultMaxRatio
	}
	return l.MaxRatio
}

// Package is a ZIP package whose central directory and manifest have been
// read and checked. Bitstreams are read one at a time with Read.
type Package struct {
	Source     string              // file name or URL, for findings
	Header     resourcesync.Header // the manifest's header
	Manifest   []byte              // manifest.xml as stored
	Bitstreams []*Bitstream        // in manifest order

	zr      *zip.Reader
	ra      io.ReaderAt
	size    int64
	spans   []span             // data of the entries read, for the overlap check
	tiles   map[*zip.File]tile // bytes of the entries read, for checkTiling
	visited map[*zip.File]bool // entries Visit checked already
	rep     *finding.Reporter
	lim     Limits
	index   map[*zip.File]int // central directory position
	place   placement         // where the local headers are
	mf      *zip.File         // manifest.xml
	buf     []byte
	mh      *digest.Multi // the last bitstream's hashes, for the next (hasher)
}

// Bitstream is one manifest entry and the ZIP entry its path names.
type Bitstream struct {
	N      int // 1-based position in the manifest
	URL    resourcesync.URL
	Path   string               // the manifest's path attribute
	Want   resourcesync.HashSet // the manifest's hashes
	Length int64                // the manifest's length, or -1 when absent
	File   *zip.File            // nil when deleted, or when the entry is missing or unsafe
	Bad    string               // why the bitstream cannot be read, when File is nil and it is not deleted
}

// Change is the entry's change attribute, empty in a Resource Dump.
func (b *Bitstream) Change() string {
	if b.URL.MD == nil {
		return ""
	}
	return b.URL.MD.Change
}

// Deleted reports a change="deleted" entry, which has no bitstream.
func (b *Bitstream) Deleted() bool { return b.Change() == resourcesync.ChangeDeleted }

// OpenPackage reads the central directory and manifest.xml of the package
// in ra. It reports every problem with the archive's names and with the
// manifest to rep, and fails with ErrRejected when the package cannot be
// used: no readable central directory, no usable manifest. wantCap, when
// not empty, is the manifest capability the dump document implies.
func OpenPackage(ra io.ReaderAt, size int64, src, wantCap string, lim Limits, rep *finding.Reporter) (*Package, error) {
	return OpenPackageDecoded(ra, size, src, wantCap, lim, rep, nil)
}

// Decoded is a package's manifest decoded before the package is opened,
// as unpack's survey of a dump's targets decodes every manifest: the
// spool (internal/entryspool) of its entries, whose source is the SHA-256
// of the manifest's bytes.
type Decoded struct {
	Spool string
}

// OpenPackageDecoded is OpenPackage that takes the manifest's entries from
// dec instead of decoding them again, when the spool was made from the
// manifest.xml it reads (the same SHA-256): the same bytes decode to the
// same entries, and are checked the same way. dec may be nil.
func OpenPackageDecoded(ra io.ReaderAt, size int64, src, wantCap string, lim Limits, rep *finding.Reporter, dec *Decoded) (*Package, error) {
	zr, err := zip.NewReader(ra, size)
	if err != nil && !errors.Is(err, zip.ErrInsecurePath) {
		return nil, reject(rep, finding.Finding{Severity: finding.Error, Code: finding.CheckZip, Source: src, Msg: "unreadable central directory: " + err.Error()})
	}
	p := &Package{Source: src, zr: zr, ra: ra, size: size, rep: rep, lim: lim, index: make(map[*zip.File]int, len(zr.File)), tiles: map[*zip.File]tile{}, visited: map[*zip.File]bool{}}
	files := p.indexEntries()
	p.placeEntries()
	mf, err := p.manifestEntry(files)
	if err != nil {
		return nil, err
	}
	p.mf = mf
	if err := p.readManifest(mf); err != nil {
		return nil, err
	}
	if err := p.decodeManifest(wantCap, dec); err != nil {
		return nil, err
	}
	p.resolve(files)
	return p, nil
}

// ReadManifest decodes and checks a package's manifest read on its own
// (a detached copy): a Package whose bitstreams have no ZIP entry to
// read, for planning what the package would change without reading it.
// The manifest is bounded by the sitemap size limit.
func ReadManifest(r io.Reader, src, wantCap string, lim Limits, rep *finding.Reporter) (*Package, error) {
	b, err := io.ReadAll(io.LimitReader(r, resourcesync.MaxBytes+1))
	switch {
	case err != nil:
		return nil, reject(rep, finding.Finding{Severity: finding.Error, Code: finding.CheckManifest, Source: src, Path: ManifestName, Msg: "manifest: " + err.Error()})
	case len(b) > resourcesync.MaxBytes:
		return nil, reject(rep, finding.Finding{Severity: finding.Error, Code: finding.CheckManifest, Source: src, Path: ManifestName,
			Msg: fmt.Sprintf("manifest larger than %d bytes", resourcesync.MaxBytes)})
	}
	p := &Package{Source: src, Manifest: b, rep: rep, lim: lim}
	if err := p.decodeManifest(wantCap, nil); err != nil {
		return nil, err
	}
	return p, nil
}

// ManifestOnly says whether the package was read from its manifest alone
// (ReadManifest): its bitstreams cannot be read.
func (p *Package) ManifestOnly() bool { return p.zr == nil && p.ra == nil }

func reject(rep *finding.Reporter, f finding.Finding) error {
	rep.Report(f)
	return fmt.Errorf("%s: %w: %s", f.Source, ErrRejected, f.Msg)
}

func (p *Package) report(f finding.Finding) {
	f.Source = p.Source
	p.rep.Report(f)
}

// indexEntries maps names to entries, reporting unsafe and duplicate
// names. Every entry stays in the map, so that a manifest path naming an
// unsafe entry is refused with the reason rather than called missing.
func (p *Package) indexEntries() map[string][]*zip.File {
	files := make(map[string][]*zip.File, len(p.zr.File))
	for i, f := range p.zr.File {
		p.index[f] = i
		if err := SafeName(f.Name); err != nil {
			p.report(finding.Finding{Severity: finding.Error, Code: finding.CheckName, Path: f.Name, Msg: fmt.Sprintf("%v%s", err, hint(f.Name))})
		}
		if len(files[f.Name]) == 1 {
			p.report(finding.Finding{Severity: finding.Error, Code: finding.CheckDuplicate, Path: f.Name, Msg: "more than one entry has this name"})
		}
		files[f.Name] = append(files[f.Name], f)
	}
	return files
}

// hint explains the unsafe name resync is known to write.
func hint(name string) string {
	if strings.HasPrefix(name, "../") {
		return " (resync writes such names for files in a sibling of the directory it dumped); not extracted"
	}
	return ""
}

func (p *Package) manifestEntry(files map[string][]*zip.File) (*zip.File, error) {
	switch fs := files[ManifestName]; len(fs) {
	case 1:
		return fs[0], nil
	case 0:
		msg := "no manifest.xml at the top level of the package"
		if alt := findManifestElsewhere(files); alt != "" {
			msg += " (found " + alt + ")"
		}
		return nil, reject(p.rep, finding.Finding{Severity: finding.Error, Code: finding.CheckManifest, Source: p.Source, Path: ManifestName, Msg: msg})
	}
	return nil, reject(p.rep, finding.Finding{Severity: finding.Error, Code: finding.CheckManifest, Source: p.Source, Path: ManifestName, Msg: "more than one manifest.xml"})
}

func findManifestElsewhere(files map[string][]*zip.File) string {
	for name := range files {
		if strings.HasSuffix(name, "/"+ManifestName) {
			return name
		}
	}
	return ""
}

// readManifest reads manifest.xml through the same checks as a bitstream
// (CRC, sizes, expansion), bounded by the sitemap size limit.
func (p *Package) readManifest(f *zip.File) error {
	var buf bytes.Buffer
	buf.Grow(int(min(f.UncompressedSize64, resourcesync.MaxBytes+1))) // one allocation, not a dozen
	b := &Bitstream{Path: "/" + ManifestName, Length: -1, File: f}
	res := p.read(b, &buf, resourcesync.MaxBytes)
	if res.Severity == finding.Error {
		return reject(p.rep, finding.Finding{Severity: finding.Error, Code: finding.CheckManifest, Source: p.Source, Path: ManifestName, Msg: "manifest.xml cannot be read"})
	}
	p.Manifest = buf.Bytes()
	return nil
}

// resolve finds the entry each manifest path names and reports entries no
// manifest entry names.
func (p *Package) resolve(files map[string][]*zip.File) {
	used := make(map[string]int, len(p.Bitstreams))
	for _, b := range p.Bitstreams {
		if b.Path == "" {
			continue // deleted, or already reported
		}
		name := entryName(b.Path)
		if n, dup := used[name]; dup {
			b.Bad = fmt.Sprintf("manifest entry %d has this path too", n)
			p.report(finding.Finding{Severity: finding.Error, Code: finding.CheckPath, URI: b.URL.Loc, Path: name, Msg: b.Bad})
			continue
		}
		used[name] = b.N
		if b.Deleted() || b.Bad != "" {
			continue
		}
		var check string
		b.File, check, b.Bad = pick(files[name], name)
		if b.Bad != "" {
			p.report(finding.Finding{Severity: finding.Error, Code: check, URI: b.URL.Loc, Path: name, Msg: b.Bad})
		}
	}
	p.reportOrphans(used)
}

// entryName turns a manifest path into a ZIP entry name. The spec's paths
// start with a slash; resync's do not, which the manifest check has
// already warned about.
func entryName(path string) string { return strings.TrimPrefix(path, "/") }

// EntryName is the ZIP entry a manifest path names.
func EntryName(path string) string { return entryName(path) }

// pick returns the one safe entry a manifest path names, or the check
// that fails and why.
func pick(fs []*zip.File, name string) (*zip.File, string, string) {
	switch {
	case len(fs) == 0:
		return nil, finding.CheckMissing, "the package has no entry of this name"
	case len(fs) > 1:
		return nil, finding.CheckDuplicate, fmt.Sprintf("%d entries have this name; refusing to choose one", len(fs))
	case SafeName(name) != nil:
		return nil, finding.CheckName, SafeName(name).Error()
	case strings.HasSuffix(name, "/"):
		return nil, finding.CheckPath, "the entry is a directory"
	}
	return fs[0], "", ""
}

func (p *Package) reportOrphans(used map[string]int) {
	for _, f := range p.zr.File {
		if f.Name == ManifestName || strings.HasSuffix(f.Name, "/") {
			continue
		}
		if _, ok := used[f.Name]; !ok {
			p.report(finding.Finding{Severity: finding.Error, Code: finding.CheckOrphan, Path: f.Name, Msg: "entry is not listed in the manifest"})
		}
	}
}

// InZipOrder returns the bitstreams that have an entry, in the order of
// the central directory, which is the order of the data in every package
// seen so far: reading them in this order reads the file front to back.
func (p *Package) InZipOrder() []*Bitstream {
	var out []*Bitstream
	for _, b := range p.Bitstreams {
		if b.File != nil {
			out = append(out, b)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return p.index[out[i].File] < p.index[out[j].File] })
	return out
}

// Entries is the number of entries in the central directory.
func (p *Package) Entries() int { return len(p.zr.File) }

// Release lets go of what reading the bitstreams needed: the central
// directory, the ZIP entries and the layout checks' records, a third of
// the memory of a package of small files. The manifest's entries stay,
// each with File nil. Read, InZipOrder, CheckLayout and Entries must not be
// called afterwards.
func (p *Package) Release() {
	for _, b := range p.Bitstreams {
		b.File = nil
	}
	p.zr, p.spans, p.tiles, p.index, p.mf, p.visited = nil, nil, nil, nil, nil, nil
	p.place = placement{}
}

// ReadManifest reads manifest.xml again, for a caller that let go of
// Manifest: a package's manifest is up to 50 MB. It reports nothing; the
// first read did.
func (p *Package) ReadManifest() ([]byte, error) {
	if p.Manifest != nil {
		return p.Manifest, nil
	}
	rc, err := p.mf.Open()
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return io.ReadAll(io.LimitReader(rc, resourcesync.MaxBytes+1))
}
