package audit

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/rsdump/rsdump/internal/digest"
)

// Mode says which files a run checks.
type Mode int

const (
	// All checks every file rsdump owns.
	All Mode = iota
	// Fraction checks the least recently audited K/N of the bytes: N runs
	// (for K = 1) cover the whole copy.
	Fraction
	// Subset checks slice K of N, by a stable hash of the path.
	Subset
	// Since checks the files not audited in the last Days days.
	Since
)

// MaxSubset is the largest N of a subset K/N.
const MaxSubset = 10000

// Selection is which files a run checks. Whatever it says, a file that is
// missing, or whose last check failed, is checked in every run until it
// holds again.
type Selection struct {
	Mode Mode
	K, N int // Fraction: K/N of the bytes; Subset: slice K (1-based) of N
	Days float64
}

// ParseFraction reads a fraction of the bytes: "1/7", "2/30".
func ParseFraction(s string) (Selection, error) {
	k, n, err := ratio(s, 1<<30)
	return Selection{Mode: Fraction, K: k, N: n}, err
}

// ParseSubset reads a subset: "3/10", K of N, N at most MaxSubset.
func ParseSubset(s string) (Selection, error) {
	k, n, err := ratio(s, MaxSubset)
	return Selection{Mode: Subset, K: k, N: n}, err
}

func ratio(s string, maxN int) (k, n int, err error) {
	ks, ns, ok := strings.Cut(s, "/")
	if ok {
		k, err = strconv.Atoi(ks)
		if err == nil {
			n, err = strconv.Atoi(ns)
		}
	}
	switch {
	case !ok || err != nil:
		return 0, 0, fmt.Errorf("%q is not K/N (1/7, say)", s)
	case n < 1 || n > maxN:
		return 0, 0, fmt.Errorf("%q: N must be from 1 to %d", s, maxN)
	case k < 1 || k > n:
		return 0, 0, fmt.Errorf("%q: K must be from 1 to N", s)
	}
	return k, n, nil
}

// ParseHashes reads a comma-separated list of hash algorithms, as
// Options.Hashes takes it: "blake3", "sha-256,md5".
func ParseHashes(s string) ([]string, error) { return digest.ParseList(s) }

// String says what the selection checks, for the log and messages.
func (s Selection) String() string {
	switch s.Mode {
	case Fraction:
		return fmt.Sprintf("fraction %d/%d", s.K, s.N)
	case Subset:
		return fmt.Sprintf("subset %d/%d", s.K, s.N)
	case Since:
		return fmt.Sprintf("not audited in %s days", strconv.FormatFloat(s.Days, 'f', -1, 64))
	}
	return "all"
}

// round is how many runs of a fraction K/N cover the copy: ceil(N/K).
func (s Selection) round() int64 { return int64((s.N + s.K - 1) / s.K) }

// budget is the bytes a run of a fraction takes of total: K/N of them,
// rounded up, and at least one, so that empty files are taken too.
func (s Selection) budget(total int64) int64 {
	b := (total/int64(s.N))*int64(s.K) + ((total%int64(s.N))*int64(s.K)+int64(s.N)-1)/int64(s.N)
	return max(b, 1)
}

// forced says whether run must check e whatever the selection: it is
// missing, or its last check failed.
func forced(e *entry) bool { return !e.Present || e.Failed }

// due says whether a run of a fraction must check e to keep the promise
// that a file waits at most one round: it was last checked a round of
// runs ago, or never, and was first seen a round ago (the run that saw
// it counting as one).
func (s Selection) due(e *entry, run int64) bool {
	if e.Run > 0 {
		return run-e.Run >= s.round()
	}
	return run-e.Seen >= s.round()-1
}

// picks says whether a selection other than a fraction checks e in run
// at now.
func (s Selection) picks(e *entry, now time.Time) bool {
	switch s.Mode {
	case Subset:
		return subsetOf(e.Path, s.N) == s.K-1
	case Since:
		return e.Run == 0 || e.At.Before(now.Add(-time.Duration(s.Days*24*float64(time.Hour))))
	}
	return true
}

// ageKey orders the files of a fraction: those a run must check first
// (class 0, the most overdue first), then those never checked (class 1,
// the first seen first), then the others, the least recently checked
// first; the path breaks ties.
type ageKey struct {
	class int
	value int64
}

func (s Selection) key(e *entry, run int64) ageKey {
	switch {
	case forced(e) || s.due(e, run):
		if e.Run > 0 {
			return ageKey{0, e.Run}
		}
		return ageKey{0, e.Seen - 1}
	case e.Run == 0:
		return ageKey{1, e.Seen}
	}
	return ageKey{2, e.Run}
}
