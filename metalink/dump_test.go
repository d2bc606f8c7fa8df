package metalink

import "testing"

func TestLastSegment(t *testing.T) {
	t.Parallel()
	cases := []struct{ loc, want string }{
		{"http://127.0.0.1/rs/resourcedump-00001.zip", "resourcedump-00001.zip"},
		{"http://127.0.0.1/rs/a%20b.zip?x=1", "a b.zip"},
		{"http://127.0.0.1/", ""},
		{"http://127.0.0.1", ""},
		{"http://127.0.0.1/rs/..", ""},
		{"http://127.0.0.1/rs/a%5Cb.zip", ""}, // a backslash
		{"%zz", ""},
	}
	for _, c := range cases {
		got, err := lastSegment(c.loc)
		if got != c.want || (c.want == "") != (err != nil) {
			t.Errorf("lastSegment(%q) = %q, %v; want %q", c.loc, got, err, c.want)
		}
	}
}
