package unpack

import (
	"testing"
)

// TestLookupLog: the last record of each wanted path, whether its name
// needed escaping in JSON or not, past a torn line; nothing else.
func TestLookupLog(t *testing.T) {
	d, err := openDest(t.TempDir(), false, false)
	if err != nil {
		t.Fatal(err)
	}
	defer d.close()
	names := []string{"plain.txt", "a<b>&c.txt", `quote"and\back.txt`, "ünï space.txt", "other.txt"}
	var recs []record
	for i, n := range names {
		recs = append(recs, record{Path: n, Length: int64(i), Hash: "sha-256:old"})
	}
	if err := d.appendLog(recs); err != nil {
		t.Fatal(err)
	}
	for i := range recs {
		recs[i].Hash = "sha-256:new"
	}
	if err := d.appendLog(recs[:4]); err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	for _, n := range names[:4] {
		want[n] = true
	}
	want["absent.txt"] = true
	got, err := d.lookupLog(want)
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
