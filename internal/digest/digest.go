// Package digest names the hash algorithms rsdump computes, hashes a stream
// with several of them in one pass, and reads and writes the ResourceSync
// `hash` attribute ("md5:… sha-256:…").
//
// Its registry is the only one in rsdump: the manifest codec, the Metalink
// model and the transfer engine all ask it which algorithms exist, how long
// their digests are and which is the strongest.
package digest

import (
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"errors"
	"fmt"
	"hash"
	"strings"

	"github.com/zeebo/blake3"
)

// Algorithm tokens as the spec and IANA spell them. BLAKE3 is an rsdump
// extension token: other tools cannot check it.
const (
	MD5    = "md5"
	SHA1   = "sha-1"
	SHA224 = "sha-224"
	SHA256 = "sha-256"
	SHA384 = "sha-384"
	SHA512 = "sha-512"
	BLAKE3 = "blake3"
)

// ErrUnknown is returned for an algorithm rsdump cannot compute.
var ErrUnknown = errors.New("unknown hash algorithm")

type algorithm struct {
	name   string
	new    func() hash.Hash
	hexLen int
	iana   bool // in the IANA "Hash Function Textual Names" registry
	strong bool // sha-256 or stronger (RFC 5854 §7.4)
}

// registry lists every algorithm rsdump computes, strongest first. BLAKE3
// ranks below SHA-256, whose output it matches, because every other tool
// can check SHA-256.
var registry = []algorithm{
	{SHA512, sha512.New, 128, true, true},
	{SHA384, sha512.New384, 96, true, true},
	{SHA256, sha256.New, 64, true, true},
	{BLAKE3, func() hash.Hash { return blake3.New() }, 64, false, true},
	{SHA224, sha256.New224, 56, true, false},
	{SHA1, sha1.New, 40, true, false},
	{MD5, md5.New, 32, true, false},
}

// lookup finds alg, whatever its case: "SHA-256" is "sha-256".
func lookup(alg string) (int, bool) {
	for i := range registry {
		if strings.EqualFold(registry[i].name, alg) {
			return i, true
		}
	}
	return -1, false
}

// Names lists the algorithms rsdump computes, in a stable order.
func Names() []string { return []string{MD5, SHA1, SHA224, SHA256, SHA384, SHA512, BLAKE3} }

// Strongest lists the algorithms rsdump computes, strongest first: the
// order in which a downloader or a verifier picks the one to check.
func Strongest() []string {
	out := make([]string, len(registry))
	for i, a := range registry {
		out[i] = a.name
	}
	return out
}

// Canonical returns the registry's spelling of alg (lower case), and
// whether rsdump can compute it.
func Canonical(alg string) (string, bool) {
	if i, ok := lookup(alg); ok {
		return registry[i].name, true
	}
	return alg, false
}

// Known reports whether rsdump can compute alg.
func Known(alg string) bool {
	_, ok := lookup(alg)
	return ok
}

// Rank is alg's place in Strongest (0 is the strongest), or -1 when rsdump
// cannot compute it.
func Rank(alg string) int {
	i, _ := lookup(alg)
	return i
}

// Strong reports whether alg is SHA-256 or stronger, the floor RFC 5854
// §7.4 sets for a whole-file hash.
func Strong(alg string) bool {
	i, ok := lookup(alg)
	return ok && registry[i].strong
}

// IANA reports whether alg is a name in the IANA "Hash Function Textual
// Names" registry that rsdump computes, one other tools (Metalink clients)
// can be expected to check.
func IANA(alg string) bool {
	i, ok := lookup(alg)
	return ok && registry[i].iana
}

// New returns a fresh hash for alg.
func New(alg string) (hash.Hash, error) {
	i, ok := lookup(alg)
	if !ok {
		return nil, fmt.Errorf("%w %q", ErrUnknown, alg)
	}
	return registry[i].new(), nil
}

// HexLen returns the length of alg's lower-case hex digest, or 0 when alg is
// unknown.
func HexLen(alg string) int {
	if i, ok := lookup(alg); ok {
		return registry[i].hexLen
	}
	return 0
}

// ParseList parses a comma-separated list of algorithm names, as given to
// --hash, rejecting unknown and repeated names.
func ParseList(s string) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	for _, name := range strings.Split(s, ",") {
		name, known := Canonical(strings.TrimSpace(name))
		if name == "" {
			continue
		}
		if !known {
			return nil, fmt.Errorf("%w %q (known: %s)", ErrUnknown, name, strings.Join(Names(), ", "))
		}
		if seen[name] {
			return nil, fmt.Errorf("hash algorithm %q given twice", name)
		}
		seen[name] = true
		out = append(out, name)
	}
	if len(out) == 0 {
		return nil, errors.New("no hash algorithm given")
	}
	return out, nil
}
