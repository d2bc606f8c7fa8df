package pack

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"github.com/rsdump/rsdump/internal/digest"
	"github.com/rsdump/rsdump/resourcesync"
)

// Fixed costs of a package beyond its bitstreams, as written by zipw:
// local header (30) + extended time (9) + ZIP64 extra (20) + data
// descriptor (24) + central header (46) + extended time (9) + ZIP64 extra
// (28), plus the name twice.
const (
	entryOverhead  = 30 + 9 + 20 + 24 + 46 + 9 + 28
	endOverhead    = 56 + 20 + 22
	manifestHeader = 1024 // prolog, root, <rs:md>, <rs:ln rel="up">, closing tag
	typeAllowance  = 80   // the media type is known only once the file is read
)

// planned is a package as the planner closed it.
type planned struct {
	seq   int // 1-based package number
	name  string
	items []item
	plan  string // fingerprint of the items, for resuming
}

// planner groups walked files into packages so that no package exceeds
// the size limit (counting ZIP and manifest overhead), the entry limit or
// the manifest size limit. A file larger than the size limit gets a
// package of its own.
type planner struct {
	opts     *Options
	seq      int
	cur      []item
	size     int64 // estimated package bytes
	manifest int64 // estimated manifest bytes
	emit     func(planned) error
}

func (p *planner) add(it item) error {
	cost, mcost := p.estimate(it)
	full := len(p.cur) >= p.opts.MaxEntries ||
		p.size+cost > p.opts.MaxPackageSize ||
		p.manifest+mcost > resourcesync.MaxBytes-manifestHeader
	if len(p.cur) > 0 && full {
		if err := p.flush(); err != nil {
			return err
		}
	}
	if len(p.cur) == 0 {
		p.size, p.manifest = endOverhead+manifestOverhead(), manifestHeader
	}
	p.cur = append(p.cur, it)
	p.size += cost
	p.manifest += mcost
	return nil
}

// manifestOverhead is the ZIP cost of manifest.xml itself, whose data is
// counted in the manifest estimate.
func manifestOverhead() int64 { return entryOverhead + 2*int64(len("manifest.xml")) }

// estimate returns an upper bound of what it adds to the package and to
// its manifest.
func (p *planner) estimate(it item) (pkg, manifest int64) {
	name := int64(len(entryName(it.rel)))
	// Forced deflate of incompressible data adds 5 bytes per 64 KiB block.
	data := it.size + it.size/8192 + 64
	u := resourcesync.URL{
		Loc:     locFor(p.opts.BaseURL, it.rel),
		Lastmod: it.mtime,
		MD: &resourcesync.MD{
			Hash:   placeholderHashes(p.opts.Hashes),
			Length: resourcesync.Int64(it.size),
			Type:   strings.Repeat("x", typeAllowance),
			Path:   manifestPath(it.rel),
		},
	}
	manifest = int64(resourcesync.EntrySize(u))
	return entryOverhead + 2*name + data + manifest, manifest
}

func placeholderHashes(algs []string) string {
	var s digest.Set
	for _, a := range algs {
		s = append(s, digest.Sum{Alg: a, Hex: strings.Repeat("0", digest.HexLen(a))})
	}
	return s.String()
}

func (p *planner) flush() error {
	if len(p.cur) == 0 {
		return nil
	}
	p.seq++
	pl := planned{seq: p.seq, name: packageName(p.seq), items: p.cur, plan: fingerprint(p.opts, p.cur)}
	p.cur = nil
	return p.emit(pl)
}

func packageName(seq int) string { return fmt.Sprintf("resourcedump-%05d.zip", seq) }

func manifestName(pkg string) string { return strings.TrimSuffix(pkg, ".zip") + ".manifest.xml" }

func entryName(rel string) string { return "resources/" + rel }

func manifestPath(rel string) string { return "/resources/" + rel }

// fingerprint identifies a package's planned content and the options that
// shape its bytes, so a resumed run reuses a package only when it would
// write the same one again.
func fingerprint(o *Options, items []item) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%v\x00%s\x00%d\x00%s\x00", o.BaseURL, o.CapabilityList, o.Hashes, o.Compress, o.Level, o.At.UTC().Format(time.RFC3339Nano))
	var b [8]byte
	for _, it := range items {
		h.Write([]byte(it.rel))
		binary.LittleEndian.PutUint64(b[:], uint64(it.size))
		h.Write(b[:])
		binary.LittleEndian.PutUint64(b[:], uint64(it.mtime.UnixNano()))
		h.Write(b[:])
		fmt.Fprintf(h, "%o\x00", it.mode.Perm())
	}
	return hex.EncodeToString(h.Sum(nil))
}
