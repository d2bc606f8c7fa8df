package transfer

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	mt "github.com/rsdump/rsdump/internal/mirrortest"
)

// Without piece hashes (a dump's rel="duplicate" mirrors, no Metalink), a
// corrupt mirror among good ones is found by comparing its ranges with
// theirs: the file completes and the culprit is dropped by name. With two
// mirrors the whole-file hash decides between them; with three, the
// majority.
func TestNoPieceHashesCorruptMirrorFound(t *testing.T) {
	eachPath(t, func(t *testing.T) {
		data := payload(1<<20+333, 80)
		for _, tc := range []struct {
			name       string
			bad, count int
		}{{"two-bad-first", 0, 2}, {"two-bad-second", 1, 2}, {"three", 0, 3}} {
			var urls []string
			var badURL string
			for k := range tc.count {
				opts := []mt.Option{mt.RateLimit(4 << 20)} // the corrupt one, faster, serves some ranges
				if k == tc.bad {
					opts = []mt.Option{mt.Corrupt(1, 32<<10)}
				}
				s, _ := serve(t, data, opts...)
				urls = append(urls, s.URL)
				if k == tc.bad {
					badURL = s.URL
				}
			}
			o := fastOptions()
			o.RangeSize = 128 << 10
			dir := t.TempDir()
			res, err := get(t, o, dir, fileFor("f.bin", data, 0, urls...))
			if err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			mustMatch(t, dir, "f.bin", data)
			for _, u := range urls {
				m := mirrorResult(t, res[0], u)
				if u == badURL && (!strings.Contains(m.Dropped, "disagreed with the other mirrors") || m.Bad == 0) {
					t.Errorf("%s: corrupt mirror %+v, want dropped as the one that disagreed", tc.name, m)
				}
				if u != badURL && m.Dropped != "" {
					t.Errorf("%s: good mirror dropped: %+v", tc.name, m)
				}
			}
		}
	})
}

// Two mirrors that disagree where neither copy makes the whole-file hash
// match: the file fails, naming both mirrors and the bytes.
func TestNoPieceHashesDisagreementNamed(t *testing.T) {
	t.Parallel()
	data := payload(512<<10, 81)
	a, _ := serve(t, data, mt.Corrupt(1, 32<<10))
	b, _ := serve(t, data, mt.Corrupt(1, 48<<10))
	o := fastOptions()
	o.RangeSize = 128 << 10
	dir := t.TempDir()
	_, err := get(t, o, dir, fileFor("f.bin", data, 0, a.URL, b.URL))
	if !errors.Is(err, ErrFileHash) {
		t.Fatalf("err %v, want ErrFileHash", err)
	}
	t.Log(err)
	for _, want := range []string{a.URL, b.URL, "disagree on bytes 0-131071"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}
	for _, n := range []string{"f.bin", "f.bin.part"} {
		if _, err := os.Stat(filepath.Join(dir, n)); err == nil {
			t.Errorf("%s exists", n)
		}
	}
}
