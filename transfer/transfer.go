// Package transfer downloads files from several mirrors at once. Every
// piece is checked against its Metalink hash before it counts, a mirror
// that serves bad data or fails is demoted, backed off or dropped without
// shrinking the connection budget, and an interrupted download resumes
// from NAME.part and NAME.rsdump-state.
//
// Each connection fetches one piece with a Range request; a free
// connection goes to the ready mirror with the best measured speed
// (discounted by its share of bad pieces), so faster mirrors take more
// pieces. A copy that stalls, and at the end any copy slower than an idle
// mirror would be, is fetched again elsewhere and the loser cancelled
// (a file of a few pieces has a spare worker per piece for this). A
// mirror below Options.MinSpeed over a window is dropped for the file,
// and a body longer than the range asked for fails its request. A server
// that ignores Range is used, as a last resort, to stream the whole file
// once.
//
// Without piece hashes only the whole-file hash checks the data; when it
// fails and there are several mirrors, each range is compared with a copy
// from another mirror and the mirror whose copies spoil the hash is found
// and dropped (repair.go), or the error names the mirrors that disagreed.
//
// The package never prints: it tells its progress and news through
// Options.Events; Getter.Mirrors is the state of each mirror host, for a
// caller that shows it.
package transfer

import (
	"context"
	"io"
	"net/http"
	"time"

	"github.com/rsdump/rsdump/finding"
	"github.com/rsdump/rsdump/internal/opt"
)

// Mirror is one URL a file can be fetched from.
type Mirror struct {
	URL      string
	Priority int    // lower is preferred; 0 means none (999999)
	Location string // ISO 3166-1 alpha-2 country code, or ""
	Pref     bool   // RFC 6249 "pref": the server asks us to prefer it
}

// Piece hashes of a file: Hashes[i] is the lower-case hex digest of the
// Length bytes at i*Length (the last piece may be shorter).
type Pieces struct {
	Type   string
	Length int64
	Hashes []string
}

// File is one download: where it goes, what it must be, where it is.
type File struct {
	Name    string // '/'-separated path under the output directory
	Size    int64
	HashAlg string // whole-file hash algorithm ("sha-256"), "" when unknown
	Hash    string // lower-case hex
	Pieces  Pieces // zero when the source has no piece hashes
	Mirrors []Mirror
	// Unverifiable lists the hash types the source gives when none of
	// them can be computed; such a file is refused, never fetched
	// unchecked. A file with no hash at all leaves it empty.
	Unverifiable []string
	// Authenticate, when set, reads the whole file once its size and hash
	// matched, before it gets its name: an error refuses it (a Metalink
	// file's own signature, checked under a trust). A file found complete
	// already is checked too.
	Authenticate func(r io.Reader) error

	signature []byte // a Metalink's armored OpenPGP signature of the file
}

// Options tune a Getter. Zero values take the defaults in brackets.
// Connections and PerMirror count requests in flight: over HTTP/1.1 each
// is a connection of its own; over HTTP/2 (a mirror over TLS that offers
// it, or rsdump serve's h2c) they are streams of one connection, whose
// pieces are still scheduled, raced and judged one request at a time.
type Options struct {
	Connections  int           // total requests in flight [16]
	PerMirror    int           // requests in flight per host:port [4]
	Files        int           // files downloaded at once [4]
	StallTimeout time.Duration // a request with no progress for this long is retried elsewhere [20s]
	MaxFailures  int           // consecutive failures that drop a mirror for a file [8]
	RangeSize    int64         // range length when there are no piece hashes [1 MiB]
	SaveInterval time.Duration // resume state is saved at least this often while pieces arrive [250ms]
	HeldWindow   int64         // how far ahead of its reader a held download (StreamHeld) fetches, in bytes: its memory [32 MiB, at least 4 pieces]
	Locations    []string      // preferred mirror locations, best first
	Client       *http.Client  // [rsdump's client (timeouts, stall watch, User-Agent), pools sized for the budget]
	HTTP1        bool          // the client built speaks HTTP/1.1 only (httpc.Options.HTTP1)

	// MinSpeed is the lowest throughput, in bytes/s, a mirror may keep
	// over MinSpeedWindow while it serves a file: a slower one is dropped
	// for the file, its pieces go to the others, and a file with no
	// mirror left fails naming it and its speed. Negative turns the check
	// off (aria2's --lowest-speed-limit, which is off by default). [1 KiB/s,
	// over 30s: a drip that would take 14 hours over 50 MB fails over]
	MinSpeed       int64
	MinSpeedWindow time.Duration

	// Scratch says the files are working copies that are checked again
	// before any use and removed after it (pkgfetch.Remote's packages): the
	// .part is not fsynced before its state is saved nor when it is
	// published. Nothing is lost by it: a later run trusts no byte the
	// state claims without hashing it again (resume, alreadyComplete),
	// and a file with no hash at all is started over. A final output
	// (rsdump get) must leave it false.
	Scratch bool

	// Events receives the progress in bytes (finding.Planned: every file's
	// size, when Get starts, and the bytes of a file fetched again from
	// its start; finding.Progress: bytes verified, resumed or skipped, and
	// what is left of a file's size when it ends, failed or not) and the
	// news of each file: *FileStart, *Result (a file finished, failed or
	// was skipped), *MirrorDropped, *MirrorNoRange. It is called from
	// download goroutines, must be safe for concurrent use and must not
	// block for long.
	Events func(finding.Event)
	// Completed is called with each file as soon as it is published under
	// its final name (to unpack it, say); its error fails that file.
	Completed func(ctx context.Context, r *Result) error
}

const (
	defaultConnections = 16
	defaultPerMirror   = 4
	defaultFiles       = 4
	defaultStall       = 20 * time.Second
	defaultMaxFailures = 8
	defaultRangeSize   = 1 << 20
	defaultSave        = 250 * time.Millisecond
	defaultMinSpeed    = 1 << 10
	defaultSpeedWindow = 30 * time.Second
)

func (o Options) withDefaults() Options {
	opt.Default(&o.Connections, defaultConnections)
	opt.Default(&o.PerMirror, defaultPerMirror)
	opt.Default(&o.Files, defaultFiles)
	opt.Default(&o.MaxFailures, defaultMaxFailures)
	opt.Default(&o.StallTimeout, defaultStall)
	opt.Default(&o.RangeSize, defaultRangeSize)
	opt.Default(&o.SaveInterval, defaultSave)
	opt.Default(&o.HeldWindow, 32<<20)
	if o.MinSpeed == 0 {
		o.MinSpeed = defaultMinSpeed
	}
	opt.Default(&o.MinSpeedWindow, defaultSpeedWindow)
	if o.Events == nil {
		o.Events = func(finding.Event) {}
	}
	return o
}

// FileStart announces a download; Resumed bytes were already verified.
type FileStart struct {
	Name    string
	Size    int64
	Resumed int64
}

// MirrorDropped says a mirror will not be used again for a file.
type MirrorDropped struct {
	File, URL, Reason string
}

// MirrorNoRange says a mirror answered a range request with the whole
// file: it gets no more piece requests, and is kept for one connection
// that streams the whole file if no other mirror is left. It is not
// dropped.
type MirrorNoRange struct {
	File, URL, Reason string
}

// Result describes one file's download.
type Result struct {
	Name    string
	Path    string // final path, set when the file is complete
	Size    int64
	Skipped bool  // already complete before this run
	Resumed int64 // bytes verified from an earlier run
	Fetched int64 // bytes received over the network, good or bad
	Mirrors []MirrorResult
	Refetch int // pieces fetched again after some of their bytes came: a bad hash, a failure mid-body or a lost race
	Retries int // failed requests that were retried
	Elapsed time.Duration
	Err     error

	// Unverified: the source gives no hash at all, so nothing checked
	// the bytes. Such a file is published with this warning, and only
	// when fetched whole in this run: a .part nobody can check is never
	// resumed from.
	Unverified bool
}

// MirrorResult is what one mirror did for a file.
type MirrorResult struct {
	URL     string
	Bytes   int64  // bytes of verified pieces it served
	Bad     int    // pieces it served that failed their hash
	Dropped string // why it was dropped, "" if it was not
	NoRange bool   // it ignored Range: used, if at all, over one connection for the whole file
}
