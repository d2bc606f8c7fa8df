package resourcesync

import (
	"errors"
	"strings"
	"testing"
)

func TestParseLocation(t *testing.T) {
	t.Parallel()
	good := []struct {
		in   string
		kind LocationKind
		out  string
		base bool
	}{
		{"http://127.0.0.1/rs/capabilitylist.xml", LocHTTP, "http://127.0.0.1/rs/capabilitylist.xml", false},
		{"HTTPS://127.0.0.1:8443/rs/", LocHTTP, "https://127.0.0.1:8443/rs/", true},
		{"http://127.0.0.1", LocHTTP, "http://127.0.0.1", true},
		{"S3://bucket/prefix/resourcedump.xml", LocS3, "s3://bucket/prefix/resourcedump.xml", false},
		{"s3://bucket/prefix/", LocS3, "s3://bucket/prefix/", true},
		{"/srv/dump/resourcedump.xml", LocPath, "/srv/dump/resourcedump.xml", false},
		{"out", LocPath, "out", false},
		{".", LocPath, ".", false},
		{"./a:b/c", LocPath, "./a:b/c", false},
		{"/tmp/host:80/x", LocPath, "/tmp/host:80/x", false},
		{"dir/a:b", LocPath, "dir/a:b", false},
		{"-", LocPath, "-", false},
	}
	for _, c := range good {
		l, err := ParseLocation(c.in)
		if err != nil || l.Kind() != c.kind || l.String() != c.out || l.IsBase() != c.base || l.IsZero() {
			t.Errorf("ParseLocation(%q) = %v %q base %v, %v; want kind %v %q base %v", c.in, l.Kind(), l, l.IsBase(), err, c.kind, c.out, c.base)
		}
	}
	bad := []struct{ in, says string }{
		{"", "empty"},
		{"htp://x", "no htp: URL"},
		{"file:///x", "no file: URL; give the file's path"},
		{"ftp://127.0.0.1/x", "no ftp: URL"},
		{"127.0.0.1:8080/x", "write http://127.0.0.1:8080/x"},
		{"localhost:8080/x", "HOST:PORT"},
		{"host:8080", "HOST:PORT"},
		{"a:b/c", "./a:b/c"},
		{"C:x", "./C:x"},
		{"http:/x", "not an absolute http(s) URL"},
		{"http:x", "names no host"},
		{"https://", "names no host"},
		{"http://127.0.0.1/%zz", "%zz"},
		{"s3://", "bucket"},
		{"s3://Bad_Bucket/x", "bucket"},
	}
	for _, c := range bad {
		l, err := ParseLocation(c.in)
		if !errors.Is(err, ErrLocation) || !strings.Contains(err.Error(), c.says) || !l.IsZero() {
			t.Errorf("ParseLocation(%q) = %q, %v; want ErrLocation saying %q", c.in, l, err, c.says)
		}
	}
}

func TestLocationOf(t *testing.T) {
	t.Parallel()
	for in, kind := range map[string]LocationKind{
		"http://127.0.0.1/x": LocHTTP, "s3://bucket/x": LocS3, "/a/b": LocPath, "a:b": LocPath, "": 0,
	} {
		if l := LocationOf(in); l.Kind() != kind || l.String() != in {
			t.Errorf("LocationOf(%q) = %v %q, want %v", in, l.Kind(), l, kind)
		}
	}
}

// FuzzParseLocation: whatever ParseLocation takes, it takes as what
// LocationOf, the rule for references, takes it: a URL is a URL to both,
// and a path it takes is never one IsURL calls a URL.
func FuzzParseLocation(f *testing.F) {
	for _, s := range []string{"http://h/x", "s3://bucket/k", "htp://x", "a:b", "./a:b", "/x", "C:\\x", "HTTP://H"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		l, err := ParseLocation(s)
		if err != nil {
			return
		}
		if of := LocationOf(l.String()); of.Kind() != l.Kind() {
			t.Errorf("ParseLocation(%q) = %v, LocationOf its string = %v", s, l.Kind(), of.Kind())
		}
	})
}
