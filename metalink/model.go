// Package metalink reads, checks and writes Metalink 4 documents
// (RFC 5854, media type application/metalink4+xml, extension .meta4).
//
// Decode is namespace-aware, streaming and bounded (see Limits); it also
// reads Metalink 3 documents and maps them onto the same model. Every
// document Decode returns has been through Validate, which applies the
// prose rules of RFC 5854 that the informative schema does not enforce.
// Encode writes documents that validate against the RFC 5854 Appendix B
// schema and refuses models that Validate rejects.
package metalink

import (
	"encoding/xml"
	"fmt"
	"hash"
	"slices"
	"strings"
	"time"

	"github.com/rsdump/rsdump/internal/digest"
)

// Namespaces and the media type of RFC 5854.
const (
	Namespace   = "urn:ietf:params:xml:ns:metalink"
	NamespaceV3 = "http://www.metalinker.org/"
	MediaType   = "application/metalink4+xml"
)

// DefaultPriority is the priority of a url or metaurl that has none
// (§4.2.16.1); it is also the largest allowed value.
const DefaultPriority = 999999

// Metalink is a whole document. Zero values mean "absent": an empty
// string, a nil pointer, a zero time.
type Metalink struct {
	Generator  string
	Origin     string
	Dynamic    *bool     // origin@dynamic
	Published  time.Time // decoded values are in UTC
	Updated    time.Time
	Files      []File
	Extensions []Extension // foreign elements directly under metalink
}

// File is one metalink:file. Name is a relative, '/'-separated path.
type File struct {
	Name        string
	Size        *int64
	Hashes      []Hash // whole-file hashes
	Pieces      []Pieces
	URLs        []URL
	MetaURLs    []MetaURL
	Copyright   string
	Description string
	Identity    string
	Version     string
	Logo        string
	Languages   []string
	OS          []string
	Publisher   *Publisher
	Signature   *Signature
	Extensions  []Extension
}

// Hash is a whole-file hash: an IANA hash name and lower-case hex.
type Hash struct {
	Type  string
	Value string
}

// Pieces lists the hashes of consecutive Length-byte pieces of a file;
// the last piece may be shorter (§4.1.3).
type Pieces struct {
	Type   string
	Length int64
	Hashes []string
}

// URL is a mirror. Location is an ISO 3166-1 alpha-2 code or "";
// Priority 0 means absent (DefaultPriority applies).
type URL struct {
	URL      string
	Location string
	Priority int
}

// MetaURL points to a metainfo file such as a torrent (§4.2.8). Name,
// if set, names the file inside a multi-file metainfo.
type MetaURL struct {
	URL       string
	MediaType string
	Name      string
	Priority  int
}

// Publisher is metalink:publisher; URL is optional.
type Publisher struct {
	Name string
	URL  string
}

// Signature is a detached signature of the file (not of the document),
// kept verbatim, e.g. an armored OpenPGP block.
type Signature struct {
	MediaType string
	Value     string
}

// Extension is a foreign-namespace element kept so that a round trip does
// not lose it (§5). Name.Space and the attributes' Name.Space hold
// namespace URIs, never prefixes. Text is the content when there are no
// child elements; with children, non-blank text between them is kept as
// children whose Name.Local is empty, and blank text is dropped.
type Extension struct {
	Name     xml.Name
	Attrs    []xml.Attr
	Text     string
	Children []Extension
}

// EffectivePriority returns Priority, or DefaultPriority when absent.
func (u URL) EffectivePriority() int { return effectivePriority(u.Priority) }

// EffectivePriority returns Priority, or DefaultPriority when absent.
func (u MetaURL) EffectivePriority() int { return effectivePriority(u.Priority) }

func effectivePriority(p int) int {
	if p == 0 {
		return DefaultPriority
	}
	return p
}

// HashHexLen returns the length of a hex digest for an algorithm rsdump
// can compute (internal/digest's registry; names in any case).
func HashHexLen(alg string) (int, bool) {
	n := digest.HexLen(alg)
	return n, n > 0
}

// NewHash returns a hash.Hash for an algorithm rsdump can compute.
func NewHash(alg string) (hash.Hash, error) {
	h, err := digest.New(alg)
	if err != nil {
		return nil, fmt.Errorf("metalink: %w", err)
	}
	return h, nil
}

// WholeHash returns the file's whole-file hash for alg, whose type may be
// written in any case. Only a supported algorithm with a well-formed value
// counts: anything else can never be used to verify a download.
func (f *File) WholeHash(alg string) (string, bool) {
	n, ok := HashHexLen(alg)
	if !ok {
		return "", false
	}
	for _, h := range f.Hashes {
		if strings.EqualFold(h.Type, alg) && isHex(h.Value, n) {
			return strings.ToLower(h.Value), true
		}
	}
	return "", false
}

// StrongestHash returns the whole-file hash of the strongest supported
// algorithm that has a well-formed value (§4.2.4 "verify the strongest"),
// its type in canonical (lower-case) form.
func (f *File) StrongestHash() (Hash, bool) {
	for _, alg := range digest.Strongest() {
		if v, ok := f.WholeHash(alg); ok {
			return Hash{Type: alg, Value: v}, true
		}
	}
	return Hash{}, false
}

// StrongestPieces returns the piece list of the strongest supported
// algorithm whose hashes are all well-formed and whose count matches
// Size, so that a downloader can check each piece as it arrives. Its
// type is in canonical form.
func (f *File) StrongestPieces() (Pieces, bool) {
	for _, alg := range digest.Strongest() {
		for _, p := range f.Pieces {
			if strings.EqualFold(p.Type, alg) && f.usablePieces(p, digest.HexLen(alg)) {
				p.Type = alg
				return p, true
			}
		}
	}
	return Pieces{}, false
}

// UnverifiableHashes returns the types of the file's hashes (whole-file
// and pieces) when it has some but none rsdump can use to check a
// download; nil when it has a usable one or none at all. A downloader
// refuses such a file rather than fetch it unchecked.
func (f *File) UnverifiableHashes() []string {
	if _, ok := f.StrongestHash(); ok {
		return nil
	}
	if _, ok := f.StrongestPieces(); ok {
		return nil
	}
	var types []string
	for _, h := range f.Hashes {
		types = appendType(types, h.Type)
	}
	for _, p := range f.Pieces {
		types = appendType(types, p.Type)
	}
	return types
}

func appendType(types []string, t string) []string {
	if t == "" || slices.Contains(types, t) {
		return types
	}
	return append(types, t)
}

func (f *File) usablePieces(p Pieces, hexLen int) bool {
	if p.Length <= 0 || f.Size == nil || int64(len(p.Hashes)) != pieceCount(*f.Size, p.Length) {
		return false
	}
	for _, h := range p.Hashes {
		if !isHex(h, hexLen) {
			return false
		}
	}
	return true
}

// pieceCount is ceil(size/length) without overflow; an empty file has one
// (empty) piece because the schema requires at least one hash.
func pieceCount(size, length int64) int64 {
	if size <= 0 {
		return 1
	}
	n := size / length
	if size%length != 0 {
		n++
	}
	return n
}

// hexClass sorts bytes for scanHex: 0 a digit or a-f, 1 A-F, 2 not hex.
var hexClass = func() (t [256]uint8) {
	for c := range t {
		t[c] = 2
	}
	for _, r := range [][2]byte{{'0', '9'}, {'a', 'f'}} {
		for c := r[0]; c <= r[1]; c++ {
			t[c] = 0
		}
	}
	for c := 'A'; c <= 'F'; c++ {
		t[c] = 1
	}
	return t
}()

// scanHex reports whether s is n hex digits in either case, and whether
// any is upper-case, in one branch-free pass: a million piece hashes are
// checked several times while decoding and validating.
func scanHex(s string, n int) (ok, upper bool) {
	if len(s) != n {
		return false, false
	}
	var seen uint8
	for i := 0; i < len(s); i++ {
		seen |= hexClass[s[i]]
	}
	return seen&2 == 0, seen&1 != 0
}

// isHex reports whether s is n hex digits in either case.
func isHex(s string, n int) bool {
	ok, _ := scanHex(s, n)
	return ok
}
