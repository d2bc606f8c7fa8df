package unpack

import (
	"os"
	"path/filepath"
	"testing"
)

// The journal of a kept stage names only the package it was written for:
// another package at the same URL (other length or hash) starts a fresh
// one; a torn line (a run killed mid-write) is skipped, not the lines
// after it.
func TestJournalIsOfOnePackage(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	a := journalHead{Package: "http://127.0.0.1/p.zip", Length: 100, Hash: "sha-256:aa"}
	j, fresh, err := openJournal(dir, a)
	if err != nil || !fresh {
		t.Fatalf("first open: fresh %v, %v", fresh, err)
	}
	j.add(stagedLine{Target: "x", Length: 1, Hash: "sha-256:01", Start: 0, End: 40})
	j.f.Write([]byte(`{"target":"torn","len`))
	j.f.Write([]byte("\n"))
	j.add(stagedLine{Target: "y", Length: 2, Hash: "sha-256:02", Start: 40, End: 90})
	j.close()

	j, fresh, err = openJournal(dir, a)
	if err != nil || fresh || len(j.prev) != 2 || j.prev["x"].End != 40 || j.prev["y"].Start != 40 {
		t.Fatalf("reopened for the same package: fresh %v, %v, lines %+v", fresh, err, j.prev)
	}
	j.close()

	b := a
	b.Hash = "sha-256:bb"
	j, fresh, err = openJournal(dir, b)
	if err != nil || !fresh || len(j.prev) != 0 {
		t.Fatalf("opened for another package: fresh %v, %v, lines %+v", fresh, err, j.prev)
	}
	j.close()
	data, _ := os.ReadFile(filepath.Join(dir, journalName))
	j, fresh, _ = openJournal(dir, a)
	if !fresh || len(j.prev) != 0 {
		t.Errorf("the first package's lines survived the second's journal:\n%s", data)
	}
	j.close()
}

// TestJournalTornLastLine: a journal a killed run left ending in the
// middle of a line: the line the next run adds after it is read back by
// the run after that.
func TestJournalTornLastLine(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	a := journalHead{Package: "http://127.0.0.1/p.zip", Length: 100, Hash: "sha-256:aa"}
	j, _, err := openJournal(dir, a)
	if err != nil {
		t.Fatal(err)
	}
	j.add(stagedLine{Target: "x", Length: 1, Hash: "sha-256:01", Start: 0, End: 40})
	j.f.Write([]byte(`{"target":"torn","len`)) // killed here
	j.close()

	j, _, err = openJournal(dir, a)
	if err != nil {
		t.Fatal(err)
	}
	j.add(stagedLine{Target: "y", Length: 2, Hash: "sha-256:02", Start: 40, End: 90})
	j.close()

	j, fresh, err := openJournal(dir, a)
	if err != nil || fresh || j.prev["x"].End != 40 || j.prev["y"].End != 90 {
		t.Errorf("after a torn line: fresh %v, %v, lines %+v, want x and y", fresh, err, j.prev)
	}
	j.close()
}
