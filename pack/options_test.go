package pack

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rsdump/rsdump/layout"
	"github.com/rsdump/rsdump/resourcesync"
)

// TestBaseURLEncoded: a base URL with characters a URL cannot carry raw
// (a space, non-ASCII, '"') is percent-encoded before it prefixes any
// <loc>; escapes already in it are kept; and the manifest and dump still
// validate.
func TestBaseURLEncoded(t *testing.T) {
	t.Parallel()
	src := tree(t, map[string]string{"a b.txt": "a"})
	o := testOptions()
	o.BaseURL = `http://127.0.0.1/my files/café/"q"/x%2Fy`
	o.DumpURL = "http://127.0.0.1/dl/ünï"
	res, out := mustPack(t, src, o)
	urls := checkPackage(t, filepath.Join(out, res.Packages[0].Name))
	if want := "http://127.0.0.1/my%20files/caf%C3%A9/%22q%22/x%2Fy/a%20b.txt"; urls[0].Loc != want {
		t.Errorf("bitstream <loc> %s, want %s", urls[0].Loc, want)
	}
	f, _ := os.Open(filepath.Join(out, layout.DumpName))
	defer f.Close()
	_, pkgs := decodeAll(t, f)
	if want := "http://127.0.0.1/dl/%C3%BCn%C3%AF/" + res.Packages[0].Name; pkgs[0].Loc != want {
		t.Errorf("package <loc> %s, want %s", pkgs[0].Loc, want)
	}
	xmllint(t, filepath.Join(out, res.Packages[0].Manifest), urlsetSchema)
	xmllint(t, filepath.Join(out, layout.DumpName), urlsetSchema)
}

// TestBaseURLRefused: a '%' that starts no escape, and a host that is not
// ASCII, are refused with an error saying what to write instead, before
// anything is written; so are such mirror and dump URLs.
func TestBaseURLRefused(t *testing.T) {
	t.Parallel()
	src := tree(t, map[string]string{"a": "a"})
	cases := []struct {
		o    Options
		want string
	}{
		{Options{BaseURL: "http://h/100%/"}, "write %25 for a literal %"},
		{Options{BaseURL: "http://h/a%zz"}, `"%zz" is not a percent-escape`},
		{Options{BaseURL: "http://bücher.example/"}, "ASCII (punycode)"},
		{Options{BaseURL: "http://h/a?"}, "query"},
		{Options{BaseURL: "http://h/", DumpURL: "http://h/5%"}, "dump URL"},
		{Options{BaseURL: "http://h/", Metalink: &MetalinkOptions{Mirrors: []layout.Mirror{{BaseURL: "http://m/%g0"}}}}, "mirror"},
	}
	for _, c := range cases {
		out := filepath.Join(t.TempDir(), "out")
		err := c.o.Validate()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Validate(%+v) = %v, want an error with %q", c.o, err, c.want)
		}
		if _, err := Pack(context.Background(), src, out, c.o); err == nil {
			t.Errorf("Pack accepted %+v", c.o)
		}
		if _, err := os.Stat(out); err == nil {
			t.Errorf("%+v: output directory created", c.o)
		}
	}
	if _, err := layout.ParseMirror("http://m/50%,priority=2"); err == nil || !strings.Contains(err.Error(), "%25") {
		t.Errorf("layout.ParseMirror: %v", err)
	}
}

// TestValidateLeavesOptions: Validate and Pack encode copies of the
// mirrors; the caller's options are not changed.
func TestValidateLeavesOptions(t *testing.T) {
	t.Parallel()
	o := Options{BaseURL: "http://h/", Metalink: &MetalinkOptions{Mirrors: []layout.Mirror{{BaseURL: "http://m/a b"}}}}
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	if o.Metalink.Mirrors[0].BaseURL != "http://m/a b" || o.DumpURL != "" {
		t.Errorf("Validate changed the options: %+v %+v", o, o.Metalink.Mirrors)
	}
}

// TestMissingSource: a source that does not exist, or is a file, fails
// with a SourceError before the output directory or the journal exist.
func TestMissingSource(t *testing.T) {
	t.Parallel()
	file := filepath.Join(tree(t, map[string]string{"a": "a"}), "a")
	for _, src := range []string{filepath.Join(t.TempDir(), "nonexistent"), file} {
		out := filepath.Join(t.TempDir(), "out")
		_, err := Pack(context.Background(), src, out, testOptions())
		var se *SourceError
		if !errors.As(err, &se) || se.Path != src {
			t.Errorf("%s: error %v, want a SourceError naming it", src, err)
		}
		if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: output directory left behind (%v)", src, err)
		}
	}
	out := t.TempDir() // an existing output directory gets no journal
	Pack(context.Background(), filepath.Join(out, "nonexistent"), out, testOptions())
	if _, err := os.Stat(filepath.Join(out, journalName)); err == nil {
		t.Error("journal left behind")
	}
}

// TestAtInTheFuture: --at later than now plus the skew sync allows
// (resourcesync.MaxSkew) is refused before anything is written, since
// every Destination would refuse the dump; within the skew it packs.
func TestAtInTheFuture(t *testing.T) {
	t.Parallel()
	src := tree(t, map[string]string{"a": "a"})
	out := filepath.Join(t.TempDir(), "out")
	o := testOptions()
	o.At = time.Now().Add(resourcesync.MaxSkew + time.Minute)
	if _, err := Pack(context.Background(), src, out, o); !errors.Is(err, resourcesync.ErrFuture) {
		t.Errorf("Pack at now+%s: %v, want ErrFuture", resourcesync.MaxSkew+time.Minute, err)
	}
	if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused run left its output directory (%v)", err)
	}
	o.At = time.Now().Add(resourcesync.MaxSkew - time.Minute)
	if _, err := Pack(context.Background(), src, out, o); err != nil {
		t.Errorf("Pack at now+%s: %v", resourcesync.MaxSkew-time.Minute, err)
	}
}
