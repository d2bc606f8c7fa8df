package deststate

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func openTemp(t *testing.T) *Dir {
	t.Helper()
	d, err := Open(t.TempDir(), Options{Command: "test"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Close)
	return d
}

// TestLookup: the last record of each wanted path, whether its name
// needed escaping in JSON or not, past a torn line; nothing else.
func TestLookup(t *testing.T) {
	t.Parallel()
	d := openTemp(t)
	names := []string{"plain.txt", "a<b>&c.txt", `quote"and\back.txt`, "ünï space.txt", "other.txt"}
	var recs []Record
	for i, n := range names {
		recs = append(recs, Record{Path: n, Length: int64(i), Hash: "sha-256:old"})
	}
	if err := d.Append(recs); err != nil {
		t.Fatal(err)
	}
	for i := range recs {
		recs[i].Hash = "sha-256:new"
	}
	if err := d.Append(recs[:4]); err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	for _, n := range names[:4] {
		want[n] = true
	}
	want["absent.txt"] = true
	got, err := d.Lookup(want)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 4 {
		t.Errorf("%d records, want 4: %v", len(got), got)
	}
	for i, n := range names[:4] {
		if r := got[n]; r.Hash != "sha-256:new" || r.Length != int64(i) {
			t.Errorf("%q: %+v, want the last record", n, r)
		}
	}
}

func TestLogPath(t *testing.T) {
	t.Parallel()
	for line, want := range map[string]string{
		`{"path":"a/b.txt","length":1,"hash":"x"}` + "\n": "a/b.txt",
		`{"path":"ü.txt","length":1}`:                     "ü.txt",
		`{"path":"a\u003cb","length":1}`:                  "", // escaped: decode it whole
		`{"length":1,"path":"a"}`:                         "",
		`{"path":"torn`:                                   "",
	} {
		p, ok := logPath([]byte(line))
		if string(p) != want || ok != (want != "") {
			t.Errorf("%s: %q %v, want %q", line, p, ok, want)
		}
	}
}

// TestOwned: the last record of each path, in path order, deleted paths
// left out, across sort runs; Compact keeps exactly those.
func TestOwned(t *testing.T) {
	defer func(n int) { ownedRun = n }(ownedRun)
	ownedRun = 3 // several run files
	d := openTemp(t)
	mt := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	log := []Record{
		{Path: "b", Length: 1, Hash: "sha-256:b1"},
		{Path: "a", Length: 2, Hash: "sha-256:a1", Mtime: mt},
		{Path: "c", Length: 3, Hash: "sha-256:c1"},
		{Path: "b", Length: 4, Hash: "sha-256:b2"},
		{Path: "c", Length: -1},
		{Path: "d", Length: -1},
		{Path: "d", Length: 5, Hash: "sha-256:d2"},
		{Path: "a/x", Length: 6, Hash: "sha-256:ax"},
	}
	for _, r := range log {
		if err := d.Append([]Record{r}); err != nil {
			t.Fatal(err)
		}
	}
	want := []Record{log[1], log[7], log[3], log[6]}
	check := func(what string) {
		t.Helper()
		var got []Record
		st, err := d.Owned(context.Background(), t.TempDir(), func(r Record) error { got = append(got, r); return nil })
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) || st.Owned != int64(len(want)) {
			t.Fatalf("%s: %+v (%+v), want %+v", what, got, st, want)
		}
		for i := range want {
			if got[i].Path != want[i].Path || got[i].Hash != want[i].Hash || !got[i].Mtime.Equal(want[i].Mtime) {
				t.Errorf("%s: record %d = %+v, want %+v", what, i, got[i], want[i])
			}
		}
	}
	check("log")
	if err := d.Compact(context.Background(), t.TempDir()); err != nil {
		t.Fatal(err)
	}
	check("compacted")
	var lines int
	d.scanLog(nil, func(Record) error { lines++; return nil })
	if lines != len(want) {
		t.Errorf("compacted log has %d lines, want %d", lines, len(want))
	}
}

// TestTornLastLine: a written log whose last line a crash cut short (in
// the middle of a record, or right before its newline) loses only that
// line: the records a later run appends are read back, by Lookup and by
// Owned, and a later deletion record hides the file again.
func TestTornLastLine(t *testing.T) {
	t.Parallel()
	for name, torn := range map[string]string{
		"mid-record":     `{"path":"torn.txt","len`,
		"before newline": `{"path":"whole.txt","length":7,"hash":"sha-256:77"}`,
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			d, err := Open(dir, Options{Command: "test"})
			if err != nil {
				t.Fatal(err)
			}
			if err := d.Append([]Record{{Path: "first.txt", Length: 1, Hash: "sha-256:01"}}); err != nil {
				t.Fatal(err)
			}
			d.Close()
			f, err := os.OpenFile(filepath.Join(dir, DirName, logName), os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				t.Fatal(err)
			}
			f.WriteString(torn) // the crash
			f.Close()

			d, err = Open(dir, Options{Command: "test"}) // a later run
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			if err := d.Append([]Record{{Path: "later.txt", Length: 2, Hash: "sha-256:02"}}); err != nil {
				t.Fatal(err)
			}
			got, err := d.Lookup(map[string]bool{"later.txt": true, "first.txt": true, "whole.txt": true})
			if err != nil {
				t.Fatal(err)
			}
			if got["later.txt"].Hash != "sha-256:02" || got["first.txt"].Hash != "sha-256:01" {
				t.Errorf("after a torn line: %+v, want first.txt and later.txt", got)
			}
			if _, ok := got["whole.txt"]; ok != (name == "before newline") {
				t.Errorf("a whole record that lacked only its newline: read back %v", ok)
			}
			owned := func() map[string]bool {
				m := map[string]bool{}
				if _, err := d.Owned(context.Background(), t.TempDir(), func(r Record) error { m[r.Path] = true; return nil }); err != nil {
					t.Fatal(err)
				}
				return m
			}
			if !owned()["later.txt"] {
				t.Errorf("Owned leaves out later.txt: %v", owned())
			}
			if err := d.Append([]Record{{Path: "later.txt", Length: -1}}); err != nil {
				t.Fatal(err)
			}
			if o := owned(); o["later.txt"] || !o["first.txt"] {
				t.Errorf("after the deletion: %v, want first.txt alone", o)
			}
		})
	}
}
