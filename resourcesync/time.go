package resourcesync

import (
	"fmt"
	"time"
)

// Layouts of the W3C-DTF profile of ISO 8601 (https://www.w3.org/TR/NOTE-datetime),
// which ResourceSync uses for every datetime. time.RFC3339Nano covers both
// hh:mm:ssTZD and hh:mm:ss.sTZD.
const (
	layoutYear    = "2006"
	layoutMonth   = "2006-01"
	layoutDay     = "2006-01-02"
	layoutMinutes = "2006-01-02T15:04Z07:00"
)

// ParseTime parses a W3C datetime in any of its six forms: YYYY, YYYY-MM,
// YYYY-MM-DD, YYYY-MM-DDThh:mmTZD, YYYY-MM-DDThh:mm:ssTZD and
// YYYY-MM-DDThh:mm:ss.sTZD, where TZD is Z or ±hh:mm. A time of day without
// a zone is rejected: it names no instant. The result is in UTC; the date-only
// forms mean the start of that period in UTC.
func ParseTime(s string) (time.Time, error) {
	layout, ok := w3cLayout(s)
	if !ok {
		return time.Time{}, fmt.Errorf("%q is not a W3C datetime", s)
	}
	t, err := time.Parse(layout, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q is not a W3C datetime: %w", s, err)
	}
	return t.UTC(), nil
}

// FormatTime writes t in UTC as YYYY-MM-DDThh:mm:ss[.s]Z, the form §7
// recommends. Fractional seconds appear only when non-zero, without trailing
// zeros.
func FormatTime(t time.Time) string {
	return t.UTC().Format(time.RFC3339Nano)
}

// w3cLayout checks the shape of s character by character and returns the
// time.Parse layout for it. time.Parse alone is too lenient for this: it
// accepts a comma before fractional seconds, and it would accept fractional
// seconds after hh:mm.
func w3cLayout(s string) (string, bool) {
	switch len(s) {
	case 4:
		return layoutYear, matches(s, "9999")
	case 7:
		return layoutMonth, matches(s, "9999-99")
	case 10:
		return layoutDay, matches(s, "9999-99-99")
	}
	const prefix = "9999-99-99T99:99"
	if len(s) < len(prefix) || !matches(s[:len(prefix)], prefix) {
		return "", false
	}
	rest, layout := s[len(prefix):], layoutMinutes
	if len(rest) >= 3 && matches(rest[:3], ":99") {
		rest, layout = skipFraction(rest[3:]), time.RFC3339Nano
	}
	return layout, isZone(rest)
}

// matches reports whether s has the shape of pattern, in which '9' stands
// for any ASCII digit and every other byte stands for itself.
func matches(s, pattern string) bool {
	if len(s) != len(pattern) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if pattern[i] == '9' && !isDigit(s[i]) || pattern[i] != '9' && s[i] != pattern[i] {
			return false
		}
	}
	return true
}

// skipFraction drops a leading ".digits" from s. A '.' without a digit is
// left in place so that the zone check fails on it.
func skipFraction(s string) string {
	if len(s) < 2 || s[0] != '.' || !isDigit(s[1]) {
		return s
	}
	i := 1
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	return s[i:]
}

func isZone(s string) bool {
	return s == "Z" || len(s) == 6 && (s[0] == '+' || s[0] == '-') && matches(s[1:], "99:99")
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }
