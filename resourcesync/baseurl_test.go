package resourcesync

import (
	"net/url"
	"strings"
	"testing"
)

func TestCleanBaseURL(t *testing.T) {
	t.Parallel()
	good := map[string]string{
		"http://h":                      "http://h/",
		"http://h/rs":                   "http://h/rs/",
		"http://h:8080/a b/":            "http://h:8080/a%20b/",
		"http://h/a%20b/":               "http://h/a%20b/",
		"http://h/café/":                "http://h/caf%C3%A9/",
		"http://h/x%2Fy z":              "http://h/x%2Fy%20z/",
		`http://h/"q"<x>[y]{z}|^` + "`": "http://h/%22q%22%3Cx%3E%5By%5D%7Bz%7D%7C%5E%60/",
		"http://h/a+b&c=d;e,f:g@h~i/":   "http://h/a+b&c=d;e,f:g@h~i/",
		"https://u:p@h/100%25/":         "https://u:p@h/100%25/",
	}
	for in, want := range good {
		if got, err := CleanBaseURL(in); err != nil || got != want {
			t.Errorf("CleanBaseURL(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	bad := map[string]string{
		"http://h/100%/":     "write %25",
		"http://h/%zz":       `"%zz" is not a percent-escape`,
		"http://bücher.de/":  "punycode",
		"http://h/a?":        "query",
		"http://h/a?b=c":     "query",
		"http://h/a#f":       "fragment",
		"relative/path":      "not an absolute URL",
		"file:///tmp/x":      "not an absolute URL",
		"http://h/a\tb":      "control character",
		"http://h/" + "\x00": "control character",
	}
	for in, want := range bad {
		if got, err := CleanBaseURL(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("CleanBaseURL(%q) = %q, %v; want an error with %q", in, got, err, want)
		}
	}
}

func TestLocEncoding(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		"a b.txt":       "a%20b.txt",
		"100%.txt":      "100%25.txt",
		"x#y?z":         "x%23y%3Fz",
		"dir/ünï ☃.txt": "dir/%C3%BCn%C3%AF%20%E2%98%83.txt",
		"a+b&c=d":       "a+b&c=d",
		"d0/f-1_2.~x":   "d0/f-1_2.~x",
	}
	// Every ASCII character, alone in a segment: the unescaped fast path
	// and the segment-by-segment escape agree.
	for c := 0x20; c < 0x7f; c++ {
		if c != '/' {
			cases["d/a"+string(rune(c))+"b"] = "d/" + url.PathEscape("a"+string(rune(c))+"b")
		}
	}
	for rel, want := range cases {
		if got := LocFor("http://h/rs/", rel); got != "http://h/rs/"+want {
			t.Errorf("LocFor(%q) = %q, want %q", rel, got, "http://h/rs/"+want)
		}
	}
}
