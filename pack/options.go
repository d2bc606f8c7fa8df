package pack

import (
	"errors"
	"fmt"
	"net/url"
	"runtime"
	"strings"
	"time"

	"github.com/rsdump/rsdump/internal/digest"
	"github.com/rsdump/rsdump/resourcesync"
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
	BaseURL        string // prefix of every bitstream's <loc>
	DumpURL        string // prefix of package URLs; default BaseURL
	CapabilityList string // URL for <rs:ln rel="up">, optional

	Hashes         []string // manifest hash algorithms; default sha-256
	Compress       Compression
	Level          int   // deflate level 1..9; default 6
	MaxPackageSize int64 // default 1 GiB
	MaxEntries     int   // bitstreams per package; default and maximum 50,000

	// At pins the snapshot time. When set, every at and completed
	// attribute takes this value, so the same input gives byte-identical
	// packages.
	At time.Time

	SkipChanged    bool // leave out files that change while read, with a warning
	FollowSymlinks bool
	Jobs           int // parallel readers and compressors; default GOMAXPROCS
	// Prune removes the files of an earlier, larger dump in the output
	// directory that the new dump no longer names; without it they are
	// reported and left.
	Prune bool

	// Metalink, when set, writes a .meta4 beside each package; see
	// MetalinkOptions.
	Metalink *MetalinkOptions

	// Events receives progress and warnings. It is called from several
	// goroutines, one call at a time, and must not block for long.
	Events func(Event)
}

// Mirror is one place a package is published.
type Mirror struct {
	BaseURL  string
	Priority int    // 1..999999, 0 = none
	Location string // ISO 3166-1 alpha-2, optional
}

// MetalinkOptions configure the Metalink written for each package.
type MetalinkOptions struct {
	Mirrors     []Mirror
	PieceLength int64 // 0 = chosen from the package size limit
}

func (o *Options) setDefaults() error {
	if o.BaseURL == "" {
		return errors.New("a base URL is required")
	}
	if err := checkBaseURL(o.BaseURL); err != nil {
		return fmt.Errorf("base URL: %w", err)
	}
	o.BaseURL = withSlash(o.BaseURL)
	if o.DumpURL == "" {
		o.DumpURL = o.BaseURL
	} else if err := checkBaseURL(o.DumpURL); err != nil {
		return fmt.Errorf("dump URL: %w", err)
	}
	o.DumpURL = withSlash(o.DumpURL)
	return o.setLimits()
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
		o.Events = func(Event) {}
	}
	return nil
}

func checkBaseURL(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		return err
	}
	if !u.IsAbs() || u.Host == "" {
		return fmt.Errorf("%q is not an absolute URL", s)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return fmt.Errorf("%q has a query or fragment", s)
	}
	return nil
}

func withSlash(s string) string {
	if strings.HasSuffix(s, "/") {
		return s
	}
	return s + "/"
}

// locFor returns the <loc> of a bitstream: the base URL plus the relative
// path, each segment percent-encoded per RFC 3986 so that spaces, '%',
// '#', '?' and non-ASCII characters survive.
func locFor(base, rel string) string {
	segs := strings.Split(rel, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return base + strings.Join(segs, "/")
}

// ParseHashes parses a comma-separated list of manifest hash algorithms,
// as given to --hash, refusing unknown and repeated names.
func ParseHashes(s string) ([]string, error) { return digest.ParseList(s) }
