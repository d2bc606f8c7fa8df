package transfer

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// forge leaves in dir what a hostile or broken earlier run might: a
// NAME.rsdump-state that describes f and claims every piece verified, and
// a full-size NAME.part holding other bytes.
func forge(t *testing.T, dir string, f File, part []byte) {
	t.Helper()
	d, err := New(fastOptions()).newDownload(dir, f)
	if err != nil {
		t.Fatal(err)
	}
	st := d.identity()
	st.Done = bytes.Repeat([]byte{0xff}, (d.n+7)/8)
	b, _ := json.Marshal(st)
	os.MkdirAll(filepath.Dir(d.statePath), 0o755)
	if err := os.WriteFile(d.statePath, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(d.partPath, part, 0o644); err != nil {
		t.Fatal(err)
	}
}

// A state file is a hint, never proof: with one that claims every piece
// and a .part of other bytes, the file that gets its final name is the
// real one, checked in this run, whatever hashes the source gives.
func TestForgedStateNotTrusted(t *testing.T) {
	t.Parallel()
	data := payload(300<<10, 63)
	wrong := payload(len(data), 64)
	half := append(append([]byte{}, data[:len(data)/2]...), wrong[len(data)/2:]...)
	cases := []struct {
		name       string
		pieces     bool
		whole      bool
		part       []byte
		maxFetch   int64 // bytes the run may fetch
		minResumed int64
		unverified bool
	}{
		{name: "pieces only", pieces: true, part: wrong, maxFetch: int64(len(data))},
		{name: "pieces only, half good", pieces: true, part: half, maxFetch: int64(len(data)/2 + plen), minResumed: int64(len(data)/2 - plen)},
		{name: "pieces and whole", pieces: true, whole: true, part: wrong, maxFetch: int64(len(data))},
		{name: "pieces and whole, half good", pieces: true, whole: true, part: half, maxFetch: int64(len(data)/2 + plen), minResumed: int64(len(data)/2 - plen)},
		{name: "no hash", part: wrong, maxFetch: int64(len(data)), unverified: true},
		// Resumed ranges without piece hashes rest on the whole-file
		// hash: when it fails, they go and the file is fetched again.
		{name: "whole only", whole: true, part: wrong, maxFetch: int64(len(data))},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, m := serve(t, data)
			var pl int64
			if c.pieces {
				pl = plen
			}
			f := fileFor("f.bin", data, pl, s.URL)
			if !c.whole {
				f.HashAlg, f.Hash = "", ""
			}
			dir := t.TempDir()
			forge(t, dir, f, c.part)
			res, err := get(t, fastOptions(), dir, f)
			if err != nil {
				t.Fatal(err)
			}
			mustMatch(t, dir, "f.bin", data)
			if got := m.Bytes.Load(); got > c.maxFetch {
				t.Errorf("fetched %d bytes, at most %d expected", got, c.maxFetch)
			}
			if res[0].Resumed < c.minResumed {
				t.Errorf("resumed %d bytes, at least %d expected", res[0].Resumed, c.minResumed)
			}
			if res[0].Unverified != c.unverified {
				t.Errorf("Unverified %v, want %v", res[0].Unverified, c.unverified)
			}
		})
	}
}

// A file with no hash at all is never resumed from a .part nobody can
// check, and its result says it was published unverified.
func TestNoHashUnverified(t *testing.T) {
	t.Parallel()
	data := payload(100<<10, 65)
	s, _ := serve(t, data)
	f := fileFor("f.bin", data, 0, s.URL)
	f.HashAlg, f.Hash = "", ""
	res, err := get(t, fastOptions(), t.TempDir(), f)
	if err != nil {
		t.Fatal(err)
	}
	if !res[0].Unverified {
		t.Error("a file with no hash is not marked unverified")
	}
	f = fileFor("f.bin", data, plen, s.URL)
	f.HashAlg, f.Hash = "", ""
	if res, err = get(t, fastOptions(), t.TempDir(), f); err != nil || res[0].Unverified {
		t.Errorf("piece hashes only: err %v, unverified %v", err, res[0].Unverified)
	}
}

// A resume reads the verified pieces back to check them, and takes them
// into the whole-file hash in the same pass: they are read once, not
// once for the piece hashes and again for the whole-file hash.
func TestResumeRehashFeedsWholeHash(t *testing.T) {
	t.Parallel()
	data := payload(1<<20, 66)
	s, m := serve(t, data)
	dir := t.TempDir()
	f := fileFor("f.bin", data, plen, s.URL)
	forge(t, dir, f, append(append([]byte{}, data[:len(data)-plen]...), make([]byte, plen)...))
	g := New(fastOptions())
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	d, err := g.newDownload(dir, f)
	if err != nil {
		t.Fatal(err)
	}
	d.root = openTestRoot(t, dir)
	if err := d.run(ctx); err != nil {
		t.Fatal(err)
	}
	mustMatch(t, dir, "f.bin", data)
	if d.res.Resumed != int64(len(data)-plen) || m.Bytes.Load() != plen {
		t.Errorf("resumed %d, fetched %d", d.res.Resumed, m.Bytes.Load())
	}
	if d.whole.readBack > 1 {
		t.Errorf("%d pieces read back for the whole-file hash after the resume hashed them", d.whole.readBack)
	}
}

// loadState reads a state file by its path on the system.
func loadState(path string) (stateFile, error) {
	var s stateFile
	b, err := os.ReadFile(path)
	if err != nil {
		return s, err
	}
	return s, json.Unmarshal(b, &s)
}

// openTestRoot opens dir as a download's root, for tests that run one
// without Get; it is closed when the test ends.
func openTestRoot(t *testing.T, dir string) *os.Root {
	t.Helper()
	root, err := openRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	return root
}
