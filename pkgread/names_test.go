package pkgread_test

import (
	"testing"

	"github.com/rsdump/rsdump/pkgread"
)

func TestSafeName(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{"a", "a/b.txt", "dir/", "ünï ☃.txt", "a..b", "..a"} {
		if err := pkgread.SafeName(ok); err != nil {
			t.Errorf("SafeName(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"", "/", "/etc/passwd", "../x", "a/../b", "a/./b", "a//b", `a\b`, "C:x", "c:/x", "a\x00b", "a\nb", "\xff"} {
		if err := pkgread.SafeName(bad); err == nil {
			t.Errorf("SafeName(%q) accepted", bad)
		}
	}
}
