package audit

import (
	"bufio"
	"encoding/binary"
	"hash/fnv"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/rsdump/rsdump/deststate"
	"github.com/rsdump/rsdump/internal/extsort"
	"github.com/rsdump/rsdump/internal/unixnano"
)

// entry is a file rsdump owns as a run sees it: its written-log record,
// what the audit record says of it, and whether the tree holds it.
type entry struct {
	deststate.Record
	Seen    int64     // the run that first saw this version of the file
	Run     int64     // the run that last checked it; 0: never
	At      time.Time // when; zero: never
	Failed  bool      // the last check found it damaged or missing
	Present bool      // the tree's walk found it
}

// fingerprint is a fingerprint of the version a record describes (its
// length and hashes): an audit of one version says nothing of the next,
// which a sync writes over it.
func fingerprint(r deststate.Record) string {
	h := fnv.New64a()
	io.WriteString(h, strconv.FormatInt(r.Length, 10))
	io.WriteString(h, " ")
	io.WriteString(h, r.Hash)
	return strconv.FormatUint(h.Sum64(), 16)
}

// subsetOf is the slice of n a path falls in: FNV-1a (64 bits) of the
// path, modulo n. It depends on the path alone, so that --subset K/N
// checks the same files every time.
func subsetOf(path string, n int) int {
	h := fnv.New64a()
	io.WriteString(h, path)
	return int(h.Sum64() % uint64(n))
}

// entryCodec writes entries to scratch files, in a binary form: a
// million of them are written and read several times a run.
var entryCodec = extsort.Codec[entry]{
	Append: func(b []byte, e *entry) []byte {
		b = extsort.AppendString(b, e.Path)
		b = extsort.AppendString(b, e.Hash)
		b = binary.AppendVarint(b, e.Length)
		b = binary.AppendVarint(b, unixnano.Of(e.Mtime))
		b = binary.AppendVarint(b, e.Seen)
		b = binary.AppendVarint(b, e.Run)
		b = binary.AppendVarint(b, unixnano.Of(e.At))
		flags := byte(0)
		if e.Failed {
			flags |= 1
		}
		if e.Present {
			flags |= 2
		}
		return append(b, flags)
	},
	Read: readEntry,
}

func readEntry(r *bufio.Reader) (entry, error) {
	var e entry
	var err error
	if e.Path, err = extsort.ReadString(r); err != nil {
		return e, err // io.EOF only here: a clean end
	}
	if e.Hash, err = extsort.ReadString(r); err != nil {
		return e, extsort.NoEOF(err)
	}
	var ints [5]int64
	for i := range ints {
		if ints[i], err = binary.ReadVarint(r); err != nil {
			return e, extsort.NoEOF(err)
		}
	}
	e.Length, e.Mtime, e.Seen, e.Run, e.At = ints[0], unixnano.Time(ints[1]), ints[2], ints[3], unixnano.Time(ints[4])
	flags, err := r.ReadByte()
	if err != nil {
		return e, extsort.NoEOF(err)
	}
	e.Failed, e.Present = flags&1 != 0, flags&2 != 0
	return e, nil
}

func byPath(a, b *entry) int { return strings.Compare(a.Path, b.Path) }
