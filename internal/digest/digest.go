// Package digest names the hash algorithms rsdump computes, hashes a stream
// with several of them in one pass, and reads and writes the ResourceSync
// `hash` attribute ("md5:… sha-256:…").
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
	SHA256 = "sha-256"
	SHA512 = "sha-512"
	BLAKE3 = "blake3"
)

// ErrUnknown is returned for an algorithm rsdump cannot compute.
var ErrUnknown = errors.New("unknown hash algorithm")

type algorithm struct {
	new    func() hash.Hash
	hexLen int
}

var algorithms = map[string]algorithm{
	MD5:    {md5.New, 32},
	SHA1:   {sha1.New, 40},
	SHA256: {sha256.New, 64},
	SHA512: {sha512.New, 128},
	BLAKE3: {func() hash.Hash { return blake3.New() }, 64},
}

// Names lists the algorithms rsdump computes, in a stable order.
func Names() []string { return []string{MD5, SHA1, SHA256, SHA512, BLAKE3} }

// Known reports whether rsdump can compute alg.
func Known(alg string) bool {
	_, ok := algorithms[alg]
	return ok
}

// New returns a fresh hash for alg.
func New(alg string) (hash.Hash, error) {
	a, ok := algorithms[alg]
	if !ok {
		return nil, fmt.Errorf("%w %q", ErrUnknown, alg)
	}
	return a.new(), nil
}

// HexLen returns the length of alg's lower-case hex digest, or 0 when alg is
// unknown.
func HexLen(alg string) int { return algorithms[alg].hexLen }

// ParseList parses a comma-separated list of algorithm names, as given to
// --hash, rejecting unknown and repeated names.
func ParseList(s string) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	for _, name := range strings.Split(s, ",") {
		name = strings.ToLower(strings.TrimSpace(name))
		if name == "" {
			continue
		}
		if !Known(name) {
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
