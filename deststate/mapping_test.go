package deststate_test

import (
	"strings"
	"testing"

	"github.com/rsdump/rsdump/deststate"
	"github.com/rsdump/rsdump/resourcesync"
)

func TestMapperTarget(t *testing.T) {
	t.Parallel()
	m, err := deststate.NewMapper(deststate.ByURI, "http://127.0.0.1/rs")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct{ loc, want, err string }{
		{"http://127.0.0.1/rs/a/b.txt", "a/b.txt", ""},
		{"http://127.0.0.1/rs/docs/with%20space%20%C3%BCn%C3%AF%20%23%3F%25.txt", "docs/with space ünï #?%.txt", ""},
		{"http://127.0.0.1/rs/raw space ü.txt", "raw space ü.txt", ""}, // resync does not percent-encode
		{"http://127.0.0.1/other/a.txt", "", "outside the base URL"},
		{"http://127.0.0.1/rs", "", "outside the base URL"},
		{"http://127.0.0.1/rs/", "", "base URL itself"},
		{"http://127.0.0.1/rs/a?x=1", "", "query or fragment"},
		{"http://127.0.0.1/rs/a%2Fb", "", "encoded slash"},
		{"http://127.0.0.1/rs/a/../../etc/passwd", "", `".." segment`},
		{"http://127.0.0.1/rs/%2E%2E/x", "", `".." segment`},
		{"http://127.0.0.1/rs/a%5Cb", "", "backslash"},
		{"http://127.0.0.1/rs/C:/x", "", "drive letter"},
		{"http://127.0.0.1/rs/.rsdump/state.json", "", "state directory"},
		{"http://127.0.0.1/rs/.RSDump/state.json", "", "state directory"}, // the same directory on macOS and Windows
		{"http://127.0.0.1/rs/.rsdump", "", "state directory"},
		{"http://127.0.0.1/rs/a/.rsdump/x", "a/.rsdump/x", ""},
		{"http://127.0.0.1/rs/a%zz", "", "invalid URL escape"},
	}
	for _, c := range cases {
		got, err := m.Target(resourcesync.URL{Loc: c.loc})
		switch {
		case c.err == "" && (err != nil || got != c.want):
			t.Errorf("%s: %q, %v; want %q", c.loc, got, err, c.want)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err) || !strings.Contains(err.Error(), c.loc)):
			t.Errorf("%s: error %v, want one naming the URI and saying %q", c.loc, err, c.err)
		}
	}
}

func TestMapperByPath(t *testing.T) {
	t.Parallel()
	m, _ := deststate.NewMapper(deststate.ByPath, "")
	for path, want := range map[string]string{"/resources/a.txt": "resources/a.txt", "notes/a.txt": "notes/a.txt", "../notes2/x": "", "/": "", "": ""} {
		got, err := m.Target(resourcesync.URL{Loc: "http://h/x", MD: &resourcesync.MD{Path: path}})
		if got != want || (want == "") != (err != nil) {
			t.Errorf("path %q: %q, %v; want %q", path, got, err, want)
		}
	}
	if _, err := deststate.NewMapper(deststate.ByURI, "not a url"); err == nil {
		t.Errorf("a relative base URL was accepted")
	}
}

// TestMapperBaseEncoded: a base URL given as typed (a space, non-ASCII)
// maps the URIs pack wrote under it, which carry it percent-encoded.
func TestMapperBaseEncoded(t *testing.T) {
	t.Parallel()
	for _, base := range []string{"http://h/my files/café", "http://h/my%20files/caf%C3%A9/"} {
		m, err := deststate.NewMapper(deststate.ByURI, base)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := m.Target(resourcesync.URL{Loc: "http://h/my%20files/caf%C3%A9/d/a%20b.txt"}); err != nil || got != "d/a b.txt" {
			t.Errorf("base %q: %q, %v; want d/a b.txt", base, got, err)
		}
	}
	if _, err := deststate.NewMapper(deststate.ByURI, "http://h/50%/"); err == nil || !strings.Contains(err.Error(), "%25") {
		t.Errorf("a base URL with a stray %% gave %v", err)
	}
}
