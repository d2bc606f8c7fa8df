package pack

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/rsdump/rsdump/finding"
	"github.com/rsdump/rsdump/internal/digest"
	"github.com/rsdump/rsdump/layout"
	"github.com/rsdump/rsdump/resourcesync"
	"github.com/rsdump/rsdump/sign"
)

// Compression says how bitstreams are stored in the ZIP.
type Compression int

const (
	// Auto stores media that is already compressed, and data that does not
	// shrink, and deflates the rest.
	Auto Compression = iota
	Store
	Deflate
)

// ParseCompression reads the --compress flag value.
func ParseCompression(s string) (Compression, error) {
	switch s {
	case "auto":
		return Auto, nil
	case "store":
		return Store, nil
	case "deflate":
		return Deflate, nil
	}
	return 0, fmt.Errorf("unknown compression %q (want auto, store or deflate)", s)
}

func (c Compression) String() string {
	return [...]string{"auto", "store", "deflate"}[c]
}

// DefaultMaxPackageSize is 1 GiB.
const DefaultMaxPackageSize = 1 << 30

// Options configure Pack. The zero value of every field but BaseURL has a
// sensible default.
type Options struct {
	BaseURL string // prefix of every bitstream's <loc>; a name, nothing need be served there
	DumpURL string // prefix of package URLs; default the first mirror, else BaseURL
	// CapabilityList is the URL of the Capability List every document
	// links to with rel="up"; default the capabilitylist.xml pack writes
	// beside the packages, at DumpURL.
	CapabilityList string
	// SourceDescription writes .well-known/resourcesync (§8) naming the
	// Capability List, for an output directory served at its host's root.
	SourceDescription bool
	// DescribedBy, when set, is the URL of a document about the Source and
	// its resources, linked with rel="describedby" from the Capability
	// List and the Source Description (§8, §9 recommend it).
	DescribedBy string
	// Channels, when it has a hub, are advertised in the Capability List,
	// and the run records the documents it creates or changes in
	// Result.Documents, for package notify to tell of.
	Channels layout.Channels

	Hashes         []string // manifest hash algorithms; default sha-256
	Compress       Compression
	Level          int   // deflate level 1..9; default 6
	MaxPackageSize int64 // default 1 GiB
	MaxEntries     int   // bitstreams per package; default and maximum 50,000

	// At pins the snapshot time. When set, every at and completed
	// attribute takes this value, so the same input gives byte-identical
	// packages. A time later than now plus resourcesync.MaxSkew, which a
	// Destination refuses, is refused (resourcesync.ErrFuture).
	At time.Time

	SkipChanged    bool // leave out files that change while read, with a warning
	FollowSymlinks bool
	Jobs           int // parallel readers and compressors; default GOMAXPROCS
	// Prune removes the files of an earlier, larger dump in the output
	// directory that the new dump no longer names; without it they are
	// reported and left.
	Prune bool

	// Changes writes a Change Dump of what changed since a baseline
	// instead of a Resource Dump: changedump.xml, and changedump-NNNNN.zip
	// packages of created and updated bitstreams and deletions.
	Changes bool
	// Since is the baseline of a Changes run, what the Destination has: a
	// resourcedump.xml, changedump.xml (with the resourcedump.xml its
	// changes start from beside it), resourcelist.xml, or the StateName
	// file pack leaves; default OUTDIR/StateName.
	Since string
	// Checksum compares every file's hash with the baseline's, as rsync
	// -c, instead of trusting a length and mtime that match.
	Checksum bool

	// Shard and Shards: pack only the Shard-th (from 1) of Shards disjoint
	// parts of the source, a file's part given by its path alone (see
	// ShardOf), into packages named after the shard, and write a shard
	// record instead of the dump's documents; Merge then writes those from
	// every shard's output. Zero Shards packs everything.
	Shard, Shards int
	// Parts, when set, makes the run one of several workers (Shard of
	// Shards, when known, says which) that share the source cut into
	// Parts contiguous parts by path, each worker claiming parts one at a
	// time in OUT until none is left (see parts.go); Merge then writes
	// the documents. Lease is how long a claim holds without renewal
	// (default 5 minutes): a worker that dies leaves its part to another
	// once it has passed. Worker names this one in the claims.
	Parts  int
	Lease  time.Duration
	Worker string

	// Metalink, when set, writes a .meta4 beside each package; see
	// MetalinkOptions.
	Metalink *MetalinkOptions

	// Signer, when set, signs every document the run writes (NAME.asc
	// beside it, an armored detached OpenPGP signature) and every
	// package in its Metalink (<signature>, RFC 5854 4.2.13).
	Signer *sign.Signer

	// Events receives the run's events: finding.Progress for each
	// bitstream written (its bytes, Unit its path), a finding.Finding
	// (a warning) for each file left out or odd, finding.Note for a choice
	// the user may want to know of, PackageDone and Removed. It is called
	// from several goroutines, one call at a time, and must not block for
	// long.
	Events func(finding.Event)

	dumpFromMirror bool // DumpURL was taken from the first mirror
	// A part of a claimed-parts run: its range of the walk, and the key
	// of the plan it is a part of, which the journal's completion line
	// records.
	part    *partRange
	partKey string
}

// MetalinkOptions configure the Metalink written for each package.
type MetalinkOptions struct {
	Mirrors     []layout.Mirror
	PieceLength int64 // 0 = chosen from the package size limit
}

// Validate reports what Pack would refuse in the options, before any
// output is written.
func (o Options) Validate() error {
	return o.setDefaults()
}

func (o *Options) setDefaults() error {
	if o.BaseURL == "" {
		return errors.New("a base URL is required")
	}
	if o.Shards < 0 || o.Shards > 0 && (o.Shard < 1 || o.Shard > o.Shards) || o.Shards == 0 && o.Shard != 0 {
		return fmt.Errorf("shard %d of %d: want 1 <= K <= N", o.Shard, o.Shards)
	}
	if (o.Shards > 0 || o.Parts > 0) && o.Changes {
		return errors.New("a Change Dump is not packed in shards")
	}
	if o.Parts < 0 || o.Lease < 0 {
		return errors.New("parts and lease must not be negative")
	}
	if !o.Changes && (o.Since != "" || o.Checksum) {
		return errors.New("--since and --checksum need --changes")
	}
	if h := resourcesync.Horizon(); o.At.After(h) {
		return fmt.Errorf("at %s: %w plus %s (%s), which sync, unpack and verify refuse", resourcesync.FormatTime(o.At), resourcesync.ErrFuture, resourcesync.MaxSkew, resourcesync.FormatTime(h.Truncate(time.Second)))
	}
	var err error
	if o.BaseURL, err = resourcesync.CleanBaseURL(o.BaseURL); err != nil {
		return fmt.Errorf("base URL: %w", err)
	}
	if err := o.setMirrors(); err != nil {
		return err
	}
	switch {
	case o.DumpURL != "":
		if o.DumpURL, err = resourcesync.CleanBaseURL(o.DumpURL); err != nil {
			return fmt.Errorf("dump URL: %w", err)
		}
	case o.Metalink != nil && len(o.Metalink.Mirrors) > 0:
		// The base URL only names bitstreams; the packages are served
		// where the mirrors are.
		o.DumpURL, o.dumpFromMirror = o.Metalink.Mirrors[0].BaseURL, true
	default:
		o.DumpURL = o.BaseURL
	}
	if o.CapabilityList == "" {
		o.CapabilityList = o.DumpURL + layout.CapabilityListName
	}
	if err := o.Channels.SetDefaults(); err != nil {
		return err
	}
	if o.DescribedBy != "" && !resourcesync.IsURL(o.DescribedBy) {
		return fmt.Errorf("describedby %q: not an http(s) URL", o.DescribedBy)
	}
	return o.setLimits()
}

// setMirrors checks the mirrors' URLs and encodes them as base URLs, on a
// copy: the caller's options are left as they were.
func (o *Options) setMirrors() error {
	if o.Metalink == nil {
		return nil
	}
	ml := *o.Metalink
	ml.Mirrors = slices.Clone(ml.Mirrors)
	for i, m := range ml.Mirrors {
		u, err := resourcesync.CleanBaseURL(m.BaseURL)
		if err != nil {
			return fmt.Errorf("mirror: %w", err)
		}
		ml.Mirrors[i].BaseURL = u
	}
	o.Metalink = &ml
	return nil
}

func (o *Options) setLimits() error {
	if len(o.Hashes) == 0 {
		o.Hashes = []string{digest.SHA256}
	}
	if len(o.Hashes) == 1 && strings.EqualFold(o.Hashes[0], digest.BLAKE3) {
		return errors.New("blake3 alone cannot be checked by other tools: add sha-256 or md5")
	}
	if o.Level == 0 {
		o.Level = 6
	}
	if o.Level < 1 || o.Level > 9 {
		return fmt.Errorf("deflate level %d out of range 1..9", o.Level)
	}
	if o.MaxPackageSize == 0 {
		o.MaxPackageSize = DefaultMaxPackageSize
	}
	if o.MaxPackageSize < 0 {
		return errors.New("maximum package size must be positive")
	}
	if o.MaxEntries == 0 || o.MaxEntries > resourcesync.MaxEntries {
		o.MaxEntries = resourcesync.MaxEntries
	}
	if o.Jobs <= 0 {
		o.Jobs = runtime.GOMAXPROCS(0)
	}
	if o.Events == nil {
		o.Events = func(finding.Event) {}
	}
	return nil
}

func withSlash(s string) string {
	if strings.HasSuffix(s, "/") {
		return s
	}
	return s + "/"
}

// ParseHashes parses a comma-separated list of manifest hash algorithms,
// as given to --hash, refusing unknown and repeated names.
func ParseHashes(s string) ([]string, error) { return digest.ParseList(s) }
