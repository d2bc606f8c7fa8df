package main

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// sizeValue is a pflag.Value for byte counts: plain bytes (1048576), or a
// number with a unit, decimal (64k, 64M, 1G, 1T, with or without a B) or
// binary (64KiB, 1GiB). Units are case-insensitive except that "b" alone
// means bytes; fractions (1.5G) are allowed when they come to whole bytes.
type sizeValue struct{ n *int64 }

func newSizeValue(p *int64, def int64) *sizeValue {
	*p = def
	return &sizeValue{p}
}

func (s *sizeValue) String() string {
	if s.n == nil || *s.n == 0 {
		return "0"
	}
	return formatSize(*s.n)
}

func (s *sizeValue) Type() string { return "size" }

func (s *sizeValue) Set(v string) error {
	n, err := parseSize(v)
	if err != nil {
		return err
	}
	*s.n = n
	return nil
}

var sizeUnits = map[string]float64{
	"": 1, "b": 1,
	"k": 1e3, "kb": 1e3, "m": 1e6, "mb": 1e6, "g": 1e9, "gb": 1e9, "t": 1e12, "tb": 1e12, "p": 1e15, "pb": 1e15,
	"kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40, "pib": 1 << 50,
}

// parseSize reads a byte count such as 1048576, 64M, 64MB, 1GiB or 1.5G.
func parseSize(v string) (int64, error) {
	s := strings.TrimSpace(v)
	i := strings.IndexFunc(s, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	if i < 0 {
		i = len(s)
	}
	num, unit := s[:i], strings.ToLower(strings.TrimSpace(s[i:]))
	mul, ok := sizeUnits[unit]
	if num == "" || !ok {
		return 0, fmt.Errorf("invalid size %q: want bytes, or a number with a unit such as 64M, 512KiB or 1GiB", v)
	}
	if mul == 1 || !strings.Contains(num, ".") {
		n, err := strconv.ParseInt(num, 10, 64)
		if err == nil && n <= math.MaxInt64/int64(mul) {
			return n * int64(mul), nil
		}
		if err != nil && !strings.Contains(num, ".") {
			return 0, fmt.Errorf("invalid size %q: too large", v)
		}
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return 0, fmt.Errorf("invalid size %q", v)
	}
	b := f * mul
	if b >= math.MaxInt64 {
		return 0, fmt.Errorf("invalid size %q: too large", v)
	}
	if b != math.Trunc(b) {
		return 0, fmt.Errorf("invalid size %q: not a whole number of bytes", v)
	}
	return int64(b), nil
}

// formatSize writes n in the largest binary unit that divides it.
func formatSize(n int64) string {
	for _, u := range []struct {
		name string
		size int64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n%u.size == 0 {
			return strconv.FormatInt(n/u.size, 10) + u.name
		}
	}
	return strconv.FormatInt(n, 10)
}
