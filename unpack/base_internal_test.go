package unpack

import "testing"

// TestDirPrefix: the longest common prefix of the URIs that ends with a
// slash, which the error for a wrong base URL names when the bitstreams do
// not say one base.
func TestDirPrefix(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		locs []string
		want string
	}{
		{[]string{"http://127.0.0.1/a/b/c.txt"}, "http://127.0.0.1/a/b/"},
		{[]string{"http://127.0.0.1/a/b/c.txt", "http://127.0.0.1/a/bc/d.txt"}, "http://127.0.0.1/a/"},
		{[]string{"http://127.0.0.1/a/x", "http://127.0.0.2/a/x"}, "http://"},
		{[]string{"abc", "abd"}, "ab"},
	} {
		if got := dirPrefix(c.locs); got != c.want {
			t.Errorf("dirPrefix(%q) = %q, want %q", c.locs, got, c.want)
		}
	}
}
