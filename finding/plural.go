package finding

import (
	"strconv"
	"strings"
)

// The words of a count, for every message rsdump prints or returns: a
// count agrees in number with its noun ("1 package", "2 packages", "3
// retries"), in the libraries' messages as in the CLI's.

// Plural is n and noun, made plural unless n is 1: "es" after s, x, ch
// and sh, "ies" for a y after a consonant, else "s".
func Plural[N ~int | ~int64](n N, noun string) string {
	return strconv.FormatInt(int64(n), 10) + " " + Noun(n, noun)
}

// Noun is noun, made plural unless n is 1.
func Noun[N ~int | ~int64](n N, noun string) string {
	if n == 1 || noun == "" {
		return noun
	}
	switch {
	case strings.HasSuffix(noun, "s"), strings.HasSuffix(noun, "x"), strings.HasSuffix(noun, "ch"), strings.HasSuffix(noun, "sh"):
		return noun + "es"
	case strings.HasSuffix(noun, "y") && len(noun) > 1 && !strings.ContainsRune("aeiou", rune(noun[len(noun)-2])):
		return noun[:len(noun)-1] + "ies"
	}
	return noun + "s"
}
