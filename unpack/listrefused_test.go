package unpack_test

import (
	"fmt"
	"testing"

	"github.com/rsdump/rsdump/internal/httpc"
	"github.com/rsdump/rsdump/resourcesync"
	"github.com/rsdump/rsdump/unpack"
)

// A resource refused before its GET (its staging path is another's
// file) costs no request: the resources after it, on the same
// connections, still get their own bodies.
func TestListRefusedBeforeFetch(t *testing.T) {
	t.Parallel()
	s := newListSource(t)
	s.client = httpc.New(httpc.Options{DisableCompression: true})
	var urls []resourcesync.URL
	want := map[string]string{}
	for i := range 6 {
		d := fmt.Sprintf("d%d", i)
		urls = append(urls, s.entry(d, "file "+d, "file "+d), s.entry(d+"/under.txt", "under "+d, "under "+d))
		want[d], want[d+"/under.txt"] = "file "+d, "under "+d
		for j := range 3 {
			rel := fmt.Sprintf("%s-%d.txt", d, j)
			urls = append(urls, s.entry(rel, "resource "+rel, "resource "+rel))
			want[rel] = "resource " + rel
		}
	}
	loc := s.doc("resourcelist.xml", resourcesync.Header{Kind: resourcesync.URLSet,
		MD: resourcesync.MD{Capability: resourcesync.CapResourceList, At: fixedTime}}, urls)
	for _, fetches := range []int{1, 3} {
		dst := t.TempDir()
		r, fs := s.apply(loc, dst, unpack.Options{Fetches: fetches})
		if r.Written != len(want)-6 || r.Refused != 6 {
			t.Errorf("%d fetches: %+v, want %d written and 6 refused\n%s", fetches, r, len(want)-6, dump(fs))
		}
		// Of d and d/under.txt, the first staged is written, the other
		// refused: with one worker, d.
		got := contents(readTree(t, dst))
		for rel, b := range got {
			if want[rel] != b {
				t.Errorf("%d fetches: %s holds %q, want %q", fetches, rel, b, want[rel])
			}
		}
		for i := range 6 {
			d := fmt.Sprintf("d%d", i)
			if _, ok := got[d]; fetches == 1 && !ok {
				t.Errorf("1 fetch: %s not written", d)
			}
		}
	}
}
