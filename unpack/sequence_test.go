package unpack_test

import (
	"archive/zip"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rsdump/rsdump/deststate"
	vt "github.com/rsdump/rsdump/internal/verifytest"
	"github.com/rsdump/rsdump/resourcesync"
	"github.com/rsdump/rsdump/transfer"
	"github.com/rsdump/rsdump/unpack"
)

// packagesFor writes each package into a new directory and returns the
// results that get would hand to the Sequence, and the Sequence.
func packagesFor(t *testing.T, tree string, zips [][]byte) ([]*transfer.Result, *unpack.Sequence) {
	t.Helper()
	dir := t.TempDir()
	var names []string
	var results []*transfer.Result
	for i, z := range zips {
		name := fmt.Sprintf("p%d.zip", i+1)
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, z, 0o644); err != nil {
			t.Fatal(err)
		}
		names = append(names, name)
		results = append(results, &transfer.Result{Name: name, Path: path})
	}
	m, err := deststate.NewMapper(deststate.ByURI, vt.BaseURL)
	if err != nil {
		t.Fatal(err)
	}
	seq := unpack.NewSequence(tree, unpack.Options{Mapper: m}, names)
	seq.Unpacked = func(name string, res *unpack.Result, err error) { t.Logf("%s: %+v, %v", name, res, err) }
	return results, seq
}

// failingChain is three Change Dump packages from 1:00 to 4:00 whose
// second fails: it deletes local.txt, which rsdump did not write.
func failingChain(t *testing.T) [][]byte {
	at := func(h float64) time.Time { return vt.Time.Add(time.Duration(h * float64(time.Hour))) }
	change := func(kind, rel, data string, lastmod time.Time) vt.File {
		return vt.File{Rel: rel, Data: data, Change: kind, Lastmod: lastmod}
	}
	pkgs := []vt.ChangePackage{
		{From: at(1), Until: at(2), Changes: []vt.File{change(resourcesync.ChangeCreated, "a.txt", "a1", at(1.5))}},
		{From: at(2), Until: at(3), Changes: []vt.File{change(resourcesync.ChangeDeleted, "local.txt", "", at(2.5))}},
		{From: at(3), Until: at(4), Changes: []vt.File{change(resourcesync.ChangeCreated, "b.txt", "b1", at(3.5))}},
	}
	var zips [][]byte
	for _, p := range pkgs {
		z, _ := vt.ChangeZip(t, p)
		zips = append(zips, z)
	}
	return zips
}

// Once a Change Dump package fails to unpack, the packages after it are
// held back, whichever order they finish downloading in, so that the
// state's until stays before the failed package's changes.
func TestGetUnpackStopsAtFailedChangePackage(t *testing.T) {
	t.Parallel()
	at := func(h float64) time.Time { return vt.Time.Add(time.Duration(h * float64(time.Hour))) }
	zips := failingChain(t)
	for _, order := range [][]int{{0, 1, 2}, {0, 2, 1}} {
		tree := t.TempDir()
		os.WriteFile(filepath.Join(tree, "local.txt"), []byte("not from the Source"), 0o644)
		writeState(t, tree, deststate.State{ResourceDumpAt: at(1)}) // the baseline the changes continue
		results, u := packagesFor(t, tree, zips)
		for _, i := range order {
			err := u.Arrived(context.Background(), results[i].Name, results[i].Path)
			if (err != nil) != (i == 1) {
				t.Fatalf("order %v: package %d: %v", order, i+1, err)
			}
		}
		if _, err := os.Stat(filepath.Join(tree, "b.txt")); err == nil {
			t.Errorf("order %v: the package after the failed one was unpacked", order)
		}
		var st deststate.State
		b, _ := os.ReadFile(filepath.Join(tree, ".rsdump", "state.json"))
		if err := json.Unmarshal(b, &st); err != nil || !st.ChangeDumpUntil.Equal(at(2)) {
			t.Errorf("order %v: state until %v (%v), want %v", order, st.ChangeDumpUntil, err, at(2))
		}
		err := u.Leftovers()
		if err == nil || !strings.Contains(err.Error(), "p3.zip") || !strings.Contains(err.Error(), "p2.zip failed") {
			t.Errorf("order %v: leftovers: %v", order, err)
		}
	}
}

// TestGetUnpackRunArrivedLast: when the first package is the last to
// finish downloading, the three are unpacked in one run, the later ones
// staging while the earlier commit; the second fails, so the third, staged
// already, is thrown away and held back, and the second's error goes to
// Unpacked, since the call that unpacked it was the first package's.
func TestGetUnpackRunArrivedLast(t *testing.T) {
	t.Parallel()
	at := func(h float64) time.Time { return vt.Time.Add(time.Duration(h * float64(time.Hour))) }
	zips := failingChain(t)
	tree := t.TempDir()
	os.WriteFile(filepath.Join(tree, "local.txt"), []byte("not from the Source"), 0o644)
	writeState(t, tree, deststate.State{ResourceDumpAt: at(1)})
	results, u := packagesFor(t, tree, zips)
	told := map[string]error{}
	u.Unpacked = func(name string, _ *unpack.Result, err error) { told[name] = err }
	for _, i := range []int{2, 1, 0} {
		if err := u.Arrived(context.Background(), results[i].Name, results[i].Path); err != nil {
			t.Fatalf("package %d: %v", i+1, err)
		}
	}
	if err, ok := told["p2.zip"]; !ok || err == nil {
		t.Errorf("p2.zip's failure not told to Unpacked: %v", told)
	}
	if _, ok := told["p3.zip"]; ok {
		t.Errorf("p3.zip was unpacked after the failed p2.zip: %v", told)
	}
	equalMaps(t, "tree", contents(readTree(t, tree)), map[string]string{"a.txt": "a1", "local.txt": "not from the Source"})
	if err := u.Leftovers(); err == nil || !strings.Contains(err.Error(), "p3.zip") {
		t.Errorf("leftovers: %v", err)
	}
	if left, _ := os.ReadDir(filepath.Join(tree, deststate.DirName, "tmp")); len(left) != 0 {
		t.Errorf("staging area not emptied: %d entries left", len(left))
	}
}

// A Resource Dump package that fails holds nothing back: it does not move
// the state, and the packages after it do not depend on it.
func TestGetUnpackGoesOnAfterFailedResourcePackage(t *testing.T) {
	t.Parallel()
	_, m := vt.Package(t, []vt.File{{Rel: "x.txt", Data: "x1"}})
	bad := vt.Zip(t, []vt.Entry{ // x.txt does not match its manifest hash
		{Name: "resources/x.txt", Data: []byte("zz"), Method: zip.Deflate},
		{Name: "manifest.xml", Data: m, Method: zip.Deflate},
	})
	good, _ := vt.Package(t, []vt.File{{Rel: "y.txt", Data: "y1"}})
	tree := t.TempDir()
	results, u := packagesFor(t, tree, [][]byte{bad, good})
	if err := u.Arrived(context.Background(), results[0].Name, results[0].Path); err == nil {
		t.Fatal("the bad package unpacked")
	}
	if err := u.Arrived(context.Background(), results[1].Name, results[1].Path); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(filepath.Join(tree, "y.txt")); err != nil || string(got) != "y1" {
		t.Errorf("y.txt: %q, %v", got, err)
	}
	if err := u.Leftovers(); err != nil {
		t.Error(err)
	}
}

// A package that failed to download holds back those after it.
func TestGetUnpackLeftoversNameMissingPackage(t *testing.T) {
	t.Parallel()
	good, _ := vt.Package(t, []vt.File{{Rel: "y.txt", Data: "y1"}})
	results, u := packagesFor(t, t.TempDir(), [][]byte{good, good})
	if err := u.Arrived(context.Background(), results[1].Name, results[1].Path); err != nil {
		t.Fatal(err)
	}
	err := u.Leftovers()
	if err == nil || !strings.Contains(err.Error(), "p1.zip was not downloaded: p2.zip") {
		t.Errorf("leftovers: %v", err)
	}
}

// Once every package of a Resource Dump has been unpacked, as get
// --unpack does, the tree is a snapshot at the dump's at, and a Change Dump
// continues from it; a failed package leaves no snapshot.
func TestSequenceRecordsSnapshot(t *testing.T) {
	t.Parallel()
	a, _ := vt.Package(t, []vt.File{{Rel: "a.txt", Data: "a1"}})
	b, _ := vt.Package(t, []vt.File{{Rel: "b.txt", Data: "b1"}})
	_, m := vt.Package(t, []vt.File{{Rel: "x.txt", Data: "x1"}})
	bad := vt.Zip(t, []vt.Entry{{Name: "resources/x.txt", Data: []byte("zz"), Method: zip.Deflate}, {Name: "manifest.xml", Data: m, Method: zip.Deflate}})
	for _, c := range []struct {
		zips [][]byte
		want time.Time
	}{{[][]byte{a, b}, vt.Time}, {[][]byte{a, bad}, time.Time{}}} {
		tree := t.TempDir()
		results, seq := packagesFor(t, tree, c.zips)
		for i := len(results) - 1; i >= 0; i-- { // the last one first: the snapshot waits for all
			seq.Arrived(context.Background(), results[i].Name, results[i].Path)
		}
		var s deststate.State
		if _, err := os.Stat(filepath.Join(tree, ".rsdump", "state.json")); err == nil || !c.want.IsZero() {
			s = readState(t, tree)
		}
		if !s.ResourceDumpAt.Equal(c.want) {
			t.Errorf("state %+v, want a snapshot at %v", s, c.want)
		}
	}
	tree := t.TempDir()
	results, seq := packagesFor(t, tree, [][]byte{a, b})
	for _, r := range results {
		if err := seq.Arrived(context.Background(), r.Name, r.Path); err != nil {
			t.Fatal(err)
		}
	}
	p := vt.ChangePackage{From: vt.Time, Until: vt.Time.Add(time.Hour), Changes: []vt.File{{Rel: "c.txt", Data: "c1", Change: resourcesync.ChangeCreated, Lastmod: vt.Time.Add(time.Minute)}}}
	if res, fs := run(t, vt.ChangeDump(t, t.TempDir(), []vt.ChangePackage{p}), tree, unpack.Options{}); res.Problems() != 0 || res.Written != 1 {
		t.Errorf("Change Dump after get --unpack: %+v\n%s", res, dump(fs))
	}
}
