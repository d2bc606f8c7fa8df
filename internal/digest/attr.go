package digest

import (
	"fmt"
	"strings"
)

// Sum is one `alg:hex` token.
type Sum struct {
	Alg string
	Hex string
}

func (s Sum) String() string { return s.Alg + ":" + s.Hex }

// Set is the value of a `hash` attribute: digests in document order.
type Set []Sum

// String formats the set as a `hash` attribute value.
func (s Set) String() string {
	parts := make([]string, len(s))
	for i, sum := range s {
		parts[i] = sum.String()
	}
	return strings.Join(parts, " ")
}

// Get returns the digest for alg, whatever the case of its name.
func (s Set) Get(alg string) (string, bool) {
	for _, sum := range s {
		if strings.EqualFold(sum.Alg, alg) {
			return sum.Hex, true
		}
	}
	return "", false
}

// Strongest returns the sum of the strongest algorithm in the set that
// rsdump can compute (see Strongest), with the algorithm's canonical name;
// false when the set has none.
func (s Set) Strongest() (Sum, bool) {
	best := -1
	for i, sum := range s {
		if r := Rank(sum.Alg); r >= 0 && (best < 0 || r < Rank(s[best].Alg)) {
			best = i
		}
	}
	if best < 0 {
		return Sum{}, false
	}
	alg, _ := Canonical(s[best].Alg)
	return Sum{Alg: alg, Hex: s[best].Hex}, true
}

// Algs returns the algorithms in the set, known or not.
func (s Set) Algs() []string {
	out := make([]string, len(s))
	for i, sum := range s {
		out[i] = sum.Alg
	}
	return out
}

// Unknown returns the algorithms in the set that rsdump cannot compute.
// They are kept so a report can name them, never counted as verified.
func (s Set) Unknown() []string {
	var out []string
	for _, sum := range s {
		if !Known(sum.Alg) {
			out = append(out, sum.Alg)
		}
	}
	return out
}

// Known returns the algorithms in the set that rsdump can compute.
func (s Set) Known() []string {
	var out []string
	for _, sum := range s {
		if Known(sum.Alg) {
			out = append(out, sum.Alg)
		}
	}
	return out
}

// Parse reads a `hash` attribute: whitespace-separated `alg:hex` tokens
// with lower-case hex. Names of known algorithms are matched whatever
// their case and kept in canonical form. Tokens of unknown algorithms are
// kept; a token of a
// known algorithm with the wrong digest length is an error, since it could
// never verify.
func Parse(attr string) (Set, error) {
	var s Set
	seen := map[string]bool{}
	for _, tok := range strings.Fields(attr) {
		sum, err := parseToken(tok)
		if err != nil {
			return nil, err
		}
		if seen[sum.Alg] {
			return nil, fmt.Errorf("hash token %q: algorithm %s given twice", tok, sum.Alg)
		}
		seen[sum.Alg] = true
		s = append(s, sum)
	}
	return s, nil
}

func parseToken(tok string) (Sum, error) {
	alg, hexs, ok := strings.Cut(tok, ":")
	if !ok || alg == "" || hexs == "" {
		return Sum{}, fmt.Errorf("hash token %q: want alg:hex", tok)
	}
	alg, _ = Canonical(alg)
	if !isLowerHex(hexs) {
		return Sum{}, fmt.Errorf("hash token %q: digest is not lower-case hex", tok)
	}
	if n := HexLen(alg); n != 0 && len(hexs) != n {
		return Sum{}, fmt.Errorf("hash token %q: %s digest has %d hex digits, want %d", tok, alg, len(hexs), n)
	}
	return Sum{Alg: alg, Hex: hexs}, nil
}

func isLowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// Mismatch is one algorithm whose digest differs from the expected one.
type Mismatch struct {
	Alg, Want, Got string
}

// Check compares computed sums against expected ones. It returns the
// algorithms that matched, those that differ, and those expected but not
// computed (unknown to rsdump or not requested): the caller reports the
// latter as unverifiable, never as OK.
func Check(want, got Set) (ok []string, bad []Mismatch, unchecked []string) {
	for _, w := range want {
		g, have := got.Get(w.Alg)
		switch {
		case !have:
			unchecked = append(unchecked, w.Alg)
		case g == w.Hex:
			ok = append(ok, w.Alg)
		default:
			bad = append(bad, Mismatch{Alg: w.Alg, Want: w.Hex, Got: g})
		}
	}
	return ok, bad, unchecked
}
