package finding

import "testing"

func TestPlural(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		n    int
		noun string
		want string
	}{
		{1, "package", "1 package"}, {0, "package", "0 packages"}, {2, "package", "2 packages"},
		{3, "retry", "3 retries"}, {2, "day", "2 days"}, {2, "index", "2 indexes"}, {2, "class", "2 classes"},
		{2, "match", "2 matches"}, {1, "retry", "1 retry"}, {2, "extra file", "2 extra files"},
	} {
		if got := Plural(c.n, c.noun); got != c.want {
			t.Errorf("Plural(%d, %q) = %q, want %q", c.n, c.noun, got, c.want)
		}
	}
	if got := Plural(int64(1), "byte"); got != "1 byte" {
		t.Errorf("int64: %q", got)
	}
}
