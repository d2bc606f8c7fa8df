package pkgread_test

import (
	"testing"

	"github.com/rsdump/rsdump/pkgread"
	"github.com/rsdump/rsdump/resourcesync"
)

// TestDescribe: a length and digests as one report field.
func TestDescribe(t *testing.T) {
	t.Parallel()
	sums := resourcesync.HashSet{{Alg: "md5", Hex: "ab"}, {Alg: "sha-256", Hex: "cd"}}
	for _, c := range []struct {
		length int64
		sums   resourcesync.HashSet
		want   string
	}{
		{-1, nil, ""},
		{0, nil, "length=0"},
		{-1, sums[1:], "sha-256:cd"},
		{43, sums, "length=43 md5:ab sha-256:cd"},
		{1 << 62, sums[:1], "length=4611686018427387904 md5:ab"},
	} {
		if got := pkgread.Describe(c.length, c.sums); got != c.want {
			t.Errorf("Describe(%d, %v) = %q, want %q", c.length, c.sums, got, c.want)
		}
	}
}
