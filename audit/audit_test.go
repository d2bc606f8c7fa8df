package audit

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rsdump/rsdump/deststate"
	"github.com/rsdump/rsdump/finding"
)

// TestAuditAll: a whole audit of an intact copy holds; a byte flipped
// (length and mtime kept), a file cut short and a file removed are each
// a failure naming the file with what was expected and found; a file
// rsdump did not write is an extra, apart.
func TestAuditAll(t *testing.T) {
	t.Parallel()
	tr := newTree(t, sized(20, 100))
	sum, c := tr.audit(Selection{}, day0, Options{})
	if sum.Checked != 20 || sum.OK != 20 || sum.Failed != 0 || sum.Files != 20 || sum.CheckedBytes != sum.Bytes || len(c.events) != 20 {
		t.Fatalf("intact copy: %+v", sum)
	}
	tr.flip("d1/f005.bin")
	os.Truncate(tr.path("d2/f006.bin"), 3)
	os.Remove(tr.path("d3/f007.bin"))
	os.WriteFile(tr.path("mine.txt"), []byte("not rsdump's"), 0o644)
	sum, c = tr.audit(Selection{}, day0.Add(24*time.Hour), Options{})
	if sum.Failed != 3 || sum.Missing != 1 || sum.OK != 17 || sum.Extras != 1 || sum.Problems() != 3 {
		t.Fatalf("damaged copy: %+v", sum)
	}
	want := map[string]string{"d1/f005.bin": finding.CheckHash, "d2/f006.bin": finding.CheckLength, "d3/f007.bin": finding.CheckMissing, "mine.txt": finding.CheckExtra}
	for _, f := range c.findings {
		if want[f.Path] != f.Code {
			t.Errorf("unexpected finding %v", f)
		}
		delete(want, f.Path)
		if f.Code == finding.CheckHash && (!strings.HasPrefix(f.Expected, "sha-256:") || !strings.HasPrefix(f.Actual, "sha-256:") || f.Expected == f.Actual) {
			t.Errorf("hash finding without expected and found hash: %v", f)
		}
	}
	if len(want) != 0 {
		t.Errorf("not reported: %v", want)
	}
	ev := c.checked()["d1/f005.bin"]
	if ev.Outcome != Failure || ev.Problem != finding.CheckHash || ev.Expected == ev.Found || ev.Found == "" || !strings.HasPrefix(ev.URI, "file://") {
		t.Errorf("event of the flipped file: %+v", ev)
	}
}

// TestLogRecordsEveryCheck: the log holds a line per check and a
// summary per run, the summary last, in the order they came; a last line
// a crash cut short loses only itself.
func TestLogRecordsEveryCheck(t *testing.T) {
	t.Parallel()
	tr := newTree(t, sized(5, 10))
	tr.audit(Selection{}, day0, Options{})
	logPath := filepath.Join(tr.dir, deststate.DirName, Dir, LogName)
	f, _ := os.OpenFile(logPath, os.O_WRONLY|os.O_APPEND, 0)
	f.WriteString(`{"id":"torn","run":"x","type":"fixity ch`) // a crash
	f.Close()
	sum, _ := tr.audit(Selection{}, day0.Add(time.Hour), Options{})
	lines := readLog(t, logPath)
	var runs, checks, ofRun2 int
	for _, l := range lines {
		switch {
		case l["type"] == TypeSummary:
			runs++
		case l["type"] == TypeFixity:
			checks++
		}
		if l["run"] == sum.Run {
			ofRun2++
		}
	}
	if runs != 2 || checks != 10 || ofRun2 != 6 || lines[len(lines)-1]["type"] != TypeSummary {
		t.Errorf("log: %d runs, %d checks, %d lines of the second run (want 2, 10, 6)", runs, checks, ofRun2)
	}
}

func readLog(t *testing.T, path string) []map[string]any {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []map[string]any
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var m map[string]any
		if json.Unmarshal(sc.Bytes(), &m) == nil {
			out = append(out, m)
		}
	}
	return out
}

// TestHashesChecked: by default every hash a file's record carries is
// checked; Options.Hashes checks only those named, when the record
// carries them.
func TestHashesChecked(t *testing.T) {
	t.Parallel()
	tr := newTree(t, nil)
	d, err := deststate.Open(tr.dir, deststate.Options{Command: "test"})
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(tr.path("a.txt"), []byte("abc"), 0o644)
	wrongMD5 := "md5:" + strings.Repeat("0", 32)
	d.Append([]deststate.Record{{Path: "a.txt", Length: 3, Hash: wrongMD5 + " " + sha("abc")}})
	d.Close()
	sum, c := tr.audit(Selection{}, day0, Options{})
	if sum.Failed != 1 || len(c.findings) != 1 || c.findings[0].Msg != "md5 mismatch" {
		t.Errorf("every hash: %+v %v", sum, c.findings)
	}
	sum, c = tr.audit(Selection{}, day0, Options{Hashes: []string{"sha-256"}})
	if ev := c.checked()["a.txt"]; sum.Failed != 0 || ev.Expected != sha("abc") || ev.Found != sha("abc") {
		t.Errorf("sha-256 alone: %+v %+v", sum, ev)
	}
}
