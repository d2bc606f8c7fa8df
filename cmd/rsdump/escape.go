package main

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// escapeControl makes text from a package or a document safe for a
// terminal: control characters (a newline that would forge a report line,
// an escape sequence that would rewrite the screen) and invalid UTF-8 are
// written as strconv.Quote writes them; everything else, non-ASCII
// letters included, is left as it is.
func escapeControl(s string) string {
	if !needsEscape(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			b.WriteString(`\x` + strconv.FormatUint(uint64(s[i])|0x100, 16)[1:])
		case unicode.IsControl(r):
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

func needsEscape(s string) bool {
	for _, r := range s {
		if r == utf8.RuneError || unicode.IsControl(r) {
			return true
		}
	}
	return false
}
