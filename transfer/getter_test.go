package transfer

import (
	"context"
	"strings"
	"testing"
)

// checkNames refuses names that leave the output directory on some
// system, and names whose files would collide on disk, naming the file.
func TestCheckNames(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		names []string
		bad   string // a name the error must show; "" when all are fine
	}{
		{[]string{"p.zip", "q.zip", "dir/a.zip", "dir/b.zip"}, ""},
		{[]string{"notes.tmp", "old.part", "dir/x.rsdump-state"}, ""}, // no file of theirs
		{[]string{"C:x"}, "C:x"},
		{[]string{`a\b`}, `a\\b`},
		{[]string{"a\x01b"}, `a\x01b`},
		{[]string{"../x"}, "../x"},
		{[]string{"/etc/x"}, "/etc/x"},
		{[]string{"a//b"}, "a//b"},
		{[]string{"./a"}, "./a"},
		{[]string{""}, `""`},
		{[]string{"a", "a/"}, "a/"},
		{[]string{"p.zip", "p.zip"}, "p.zip"},
		{[]string{"p.zip", "p.zip.part"}, "p.zip.part"},
		{[]string{"p.zip.part", "p.zip"}, "p.zip.part"},
		{[]string{"p.zip", "p.zip.rsdump-state"}, "p.zip.rsdump-state"},
		{[]string{"p.zip", "p.zip.rsdump-state.tmp"}, "p.zip.rsdump-state.tmp"},
		{[]string{"a", "a/b"}, "a/b"},
		{[]string{"a/b/c", "a/b"}, "a/b/c"},
		{[]string{"a", "a.part/b"}, "a.part/b"},
	} {
		var files []File
		for _, n := range tc.names {
			files = append(files, File{Name: n})
		}
		err := checkNames(files)
		switch {
		case tc.bad == "" && err != nil:
			t.Errorf("%q: %v", tc.names, err)
		case tc.bad != "" && err == nil:
			t.Errorf("%q: accepted", tc.names)
		case tc.bad != "" && !strings.Contains(err.Error(), tc.bad):
			t.Errorf("%q: error %q does not name %s", tc.names, err, tc.bad)
		}
	}
}

// Get refuses an unsafe name before it fetches anything.
func TestGetRefusesUnsafeName(t *testing.T) {
	t.Parallel()
	data := payload(10<<10, 60)
	s, m := serve(t, data)
	_, err := New(fastOptions()).Get(context.Background(), t.TempDir(), []File{fileFor(`C:\x.bin`, data, plen, s.URL)})
	if err == nil || !strings.Contains(err.Error(), "backslash") || m.Requests.Load() != 0 {
		t.Fatalf("err %v, %d requests", err, m.Requests.Load())
	}
}
