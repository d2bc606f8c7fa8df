// Package plural writes counts that agree in number with their noun
// ("1 package", "2 packages", "3 retries"), for every message rsdump
// prints or returns.
package plural

import (
	"strconv"
	"strings"
)

// Count is n and noun, made plural unless n is 1: "es" after s, x, ch
// and sh, "ies" for a y after a consonant, else "s".
func Count[N ~int | ~int64](n N, noun string) string {
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
