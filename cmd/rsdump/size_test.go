package main

import (
	"strings"
	"testing"
)

func TestParseSize(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in   string
		want int64
		err  string // substring of the error, "" = must parse
	}{
		{"0", 0, ""},
		{"1048576", 1 << 20, ""},
		{"512b", 512, ""},
		{"64k", 64e3, ""},
		{"64M", 64e6, ""},
		{"64MB", 64e6, ""},
		{"1G", 1e9, ""},
		{"1.5G", 15e8, ""},
		{"64KiB", 64 << 10, ""},
		{"4mib", 4 << 20, ""},
		{"1GiB", 1 << 30, ""},
		{"2TiB", 2 << 40, ""},
		{" 16 MiB ", 16 << 20, ""},
		{"", 0, "invalid size"},
		{"M", 0, "invalid size"},
		{"-1", 0, "invalid size"},
		{"12X", 0, "invalid size"},
		{"1.5", 0, "whole number"},
		{"0.5KiB", 512, ""},
		{"0.1b", 0, "whole number"},
		{"1.2.3M", 0, "invalid size"},
		{"99999999999999999999", 0, "too large"},
		{"9000000PiB", 0, "too large"},
	} {
		got, err := parseSize(c.in)
		switch {
		case c.err == "" && (err != nil || got != c.want):
			t.Errorf("parseSize(%q) = %d, %v; want %d", c.in, got, err, c.want)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("parseSize(%q) = %d, %v; want an error with %q", c.in, got, err, c.err)
		}
	}
}

// TestSizeFlags checks that the size flags take units, and that a bad
// size is a usage error.
func TestSizeFlags(t *testing.T) {
	t.Parallel()
	var n int64
	v := newSizeValue(&n, 1<<30)
	if v.String() != "1GiB" || v.Set("64M") != nil || n != 64e6 || v.String() != "62500KiB" {
		t.Errorf("sizeValue: %q, %d", v.String(), n)
	}
	for _, args := range [][]string{
		{"pack", "src", "-o", "x", "--base-url", "http://h/", "--max-package-size", "lots"},
		{"pack", "src", "-o", "x", "--base-url", "http://h/", "--metalink", "--piece-length", "1Q"},
		{"metalink", "f", "--mirror", "http://h/", "--piece-length", "-4"},
	} {
		code, _, errs := rsdump(t, args...)
		if code != exitUsage || !strings.Contains(errs, "invalid size") {
			t.Errorf("%q: exit %d, stderr %q; want 2 and invalid size", args, code, errs)
		}
	}
}
