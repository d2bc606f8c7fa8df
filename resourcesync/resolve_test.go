package resourcesync

import (
	"path/filepath"
	"testing"
)

// Resolve: a remote document's links resolve as URLs; a local document's
// and an S3 object's name the file beside it, whatever URL the Source
// publishes under.
func TestResolve(t *testing.T) {
	for _, c := range []struct{ doc, loc, want string }{
		{"http://127.0.0.1/rs/resourcedump.xml", "part1.zip", "http://127.0.0.1/rs/part1.zip"},
		{"http://127.0.0.1/rs/resourcedump.xml", "http://127.0.0.1:8/x/part1.zip", "http://127.0.0.1:8/x/part1.zip"},
		{"s3://dumps/rs/resourcedump.xml", "https://127.0.0.1/pub/part%201.zip", "s3://dumps/rs/part%201.zip"},
		{"s3://dumps/resourcedump.xml", "https://127.0.0.1/pub/part1.zip", "s3://dumps/part1.zip"},
		{filepath.Join("out", "resourcedump.xml"), "https://127.0.0.1/pub/part1.zip", filepath.Join("out", "part1.zip")},
	} {
		if got := Resolve(c.doc, c.loc); got != c.want {
			t.Errorf("Resolve(%q, %q) = %q, want %q", c.doc, c.loc, got, c.want)
		}
	}
	for s, want := range map[string]bool{"s3://b1b/k": true, "http://h/": true, "https://h/": true, "/tmp/x": false, "s3:/x": false} {
		if IsURL(s) != want {
			t.Errorf("IsURL(%q) = %v", s, !want)
		}
	}
}
