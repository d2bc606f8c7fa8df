package audit

import (
	"bytes"
	"context"
	"encoding/csv"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rsdump/rsdump/deststate"
	"github.com/rsdump/rsdump/finding"
	"github.com/rsdump/rsdump/unpack"
)

// TestRepairRecorded: with Repair, the damaged and missing files are
// handed to it, and each gets a replacement event: a success with the
// sums found once it holds again, a failure for one it could not restore.
func TestRepairRecorded(t *testing.T) {
	t.Parallel()
	files := sized(8, 50)
	tr := newTree(t, files)
	tr.flip("d1/f001.bin")
	os.Remove(tr.path("d2/f002.bin"))
	tr.flip("d3/f003.bin")
	var asked []string
	repair := func(_ context.Context, d *deststate.Dir, recs []deststate.Record) (*unpack.RepairResult, error) {
		res := &unpack.RepairResult{}
		for _, r := range recs {
			asked = append(asked, r.Path)
			if r.Path == "d3/f003.bin" {
				res.Unrepaired = append(res.Unrepaired, r)
				continue
			}
			os.WriteFile(filepath.Join(d.Path(), r.Path), []byte(files[r.Path]), 0o644)
			res.Repaired++
			res.Fetched += r.Length
		}
		return res, nil
	}
	sum, c := tr.audit(Selection{}, day0, Options{Repair: repair})
	if strings.Join(asked, " ") != "d1/f001.bin d2/f002.bin d3/f003.bin" {
		t.Fatalf("repair asked for %v", asked)
	}
	if sum.Failed != 3 || sum.Repaired != 2 || sum.Unrepaired != 1 || sum.Problems() != 1 {
		t.Errorf("summary: %+v", sum)
	}
	reps := map[string]Event{}
	for _, ev := range c.events {
		if ev.Type == TypeReplacement {
			reps[ev.Path] = ev
		}
	}
	for _, p := range []string{"d1/f001.bin", "d2/f002.bin"} {
		if ev := reps[p]; ev.Outcome != Success || ev.Found != ev.Expected || ev.Problem != unpack.CheckRepaired {
			t.Errorf("%s: replacement %+v", p, ev)
		}
	}
	if ev := reps["d3/f003.bin"]; ev.Outcome != Failure || ev.Problem != unpack.CheckDamaged {
		t.Errorf("d3/f003.bin: replacement %+v", reps["d3/f003.bin"])
	}
	// The next run checks the three again (failed last time): two hold.
	sum, c = tr.audit(Selection{Mode: Since, Days: 1}, day0.Add(time.Hour), Options{})
	if sum.Checked != 3 || sum.Failed != 1 || len(c.findings) != 1 || c.findings[0].Path != "d3/f003.bin" {
		t.Errorf("after the repair: %+v %v", sum, c.findings)
	}
}

// TestRecordSurvivesKilledRun: a killed run's half-written record (its
// temporary file) changes nothing: the next run reads the last whole
// record and goes on from it.
func TestRecordSurvivesKilledRun(t *testing.T) {
	t.Parallel()
	tr := newTree(t, sized(10, 100))
	sel := mustFraction(t, "1/2")
	_, c1 := tr.audit(sel, day0, Options{})
	tmp := filepath.Join(tr.dir, deststate.DirName, Dir, RecordName+".tmp")
	os.WriteFile(tmp, []byte(`{"version":1,"runs":9}`+"\n"+`{"path":"d0/f00`), 0o644)
	_, c2 := tr.audit(sel, day0.Add(24*time.Hour), Options{})
	union := keys(c1.checked())
	for p := range c2.checked() {
		union[p] = true
	}
	if len(union) != 10 {
		t.Errorf("two runs of 1/2 checked %d of 10 files (%d, then %d): the second did not go on from the first", len(union), len(c1.checked()), len(c2.checked()))
	}
}

// TestPREMIS: the PREMIS document holds, in PREMIS 3's namespace and
// element names, an event per check (eventType "fixity check") and per
// replacement (eventType "replacement") with its identifier, date and
// time, outcome and the hashes compared, linked to the file by its URI
// and to the agent, and the agent, rsdump with its version. No XML Schema
// of PREMIS is shipped with rsdump (shared/schemas holds ResourceSync's
// only), so the document is checked by XPath, with xmllint.
func TestPREMIS(t *testing.T) {
	if _, err := exec.LookPath("xmllint"); err != nil {
		t.Skip("xmllint not installed (apt-get install libxml2-utils)")
	}
	files := sized(4, 30)
	tr := newTree(t, files)
	tr.flip("d1/f001.bin")
	var buf, cbuf bytes.Buffer
	repair := func(_ context.Context, d *deststate.Dir, recs []deststate.Record) (*unpack.RepairResult, error) {
		for _, r := range recs {
			os.WriteFile(filepath.Join(d.Path(), r.Path), []byte(files[r.Path]), 0o644)
		}
		return &unpack.RepairResult{Repaired: len(recs)}, nil
	}
	_, c := tr.audit(Selection{}, day0, Options{BaseURL: "https://example.org/data/", Repair: repair,
		Recorders: []Recorder{NewPREMIS(&buf), NewCSV(&cbuf)}})
	doc := filepath.Join(t.TempDir(), "premis.xml")
	os.WriteFile(doc, buf.Bytes(), 0o644)
	xp := func(expr string) string {
		t.Helper()
		out, err := exec.Command("xmllint", "--xpath", expr, doc).CombinedOutput()
		if err != nil {
			t.Fatalf("xmllint --xpath %s: %v\n%s", expr, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	const p = `/*[local-name()='premis' and namespace-uri()='http://www.loc.gov/premis/v3']`
	ev := p + `/*[local-name()='event' and namespace-uri()='http://www.loc.gov/premis/v3']`
	el := func(name string) string {
		return `/*[local-name()='` + name + `' and namespace-uri()='http://www.loc.gov/premis/v3']`
	}
	checks := map[string]string{
		`string(` + p + `/@version)`:      "3.0",
		`count(` + p + el("object") + `)`: "1",
		`string(` + p + el("object") + el("objectIdentifier") + el("objectIdentifierValue") + `)`: "https://example.org/data/",
		`count(` + ev + `)`: "5",
		`count(` + ev + `[` + el("eventType")[1:] + `='fixity check'])`:                                                                                                                               "4",
		`count(` + ev + `[` + el("eventType")[1:] + `='replacement'])`:                                                                                                                                "1",
		`string(` + ev + `[1]` + el("eventType") + `/@valueURI)`:                                                                                                                                      "http://id.loc.gov/vocabulary/preservation/eventType/fix",
		`count(` + ev + el("eventIdentifier") + el("eventIdentifierValue") + `)`:                                                                                                                      "5",
		`count(` + ev + el("eventDateTime") + `[starts-with(., '2026-03-01T02:00:00')])`:                                                                                                              "5",
		`count(` + ev + el("eventOutcomeInformation") + el("eventOutcome") + `[.='failure'])`:                                                                                                         "1",
		`count(` + ev + el("eventOutcomeInformation") + el("eventOutcome") + `[.='success'])`:                                                                                                         "4",
		`count(` + ev + el("eventOutcomeInformation") + el("eventOutcomeDetail") + el("eventOutcomeDetailNote") + `[starts-with(., 'sha-256: expected ')])`:                                           "5",
		`string(` + ev + `[` + el("eventOutcomeInformation")[1:] + el("eventOutcome") + `='failure']` + el("linkingObjectIdentifier") + el("linkingObjectIdentifierValue") + `)`:                      "https://example.org/data/d1/f001.bin",
		`string(` + ev + `[1]` + el("linkingObjectIdentifier") + el("linkingObjectIdentifierType") + `)`:                                                                                              "URI",
		`count(` + ev + el("linkingAgentIdentifier") + el("linkingAgentIdentifierValue") + `[.=/*/*[local-name()='agent']/*[local-name()='agentIdentifier']/*[local-name()='agentIdentifierValue']])`: "5",
		`string(` + p + el("agent") + el("agentName") + `)`:                                                                                                                                           "rsdump",
		`string(` + p + el("agent") + el("agentType") + `)`:                                                                                                                                           "software",
		`string-length(` + p + el("agent") + el("agentVersion") + `) > 0`:                                                                                                                             "true",
		// PREMIS 3 orders a document's objects, then events, then agents.
		`count(` + p + el("event") + `[1]/preceding-sibling::*[local-name()='agent'])`: "0",
		`count(` + p + el("object") + `/following-sibling::*[local-name()='event'])`:   "5",
	}
	for expr, want := range checks {
		if got := xp(expr); got != want {
			t.Errorf("%s = %q, want %q", expr, got, want)
		}
	}
	failedNote := xp(`string(` + ev + `[` + el("eventOutcomeInformation")[1:] + el("eventOutcome") + `='failure']` + el("eventOutcomeInformation") + `/*[local-name()='eventOutcomeDetail'][2])`)
	if want := c.checked()["d1/f001.bin"]; !strings.Contains(failedNote, strings.TrimPrefix(want.Expected, "sha-256:")) || !strings.Contains(failedNote, strings.TrimPrefix(want.Found, "sha-256:")) {
		t.Errorf("the failure's note %q lacks the hashes expected and found (%s, %s)", failedNote, want.Expected, want.Found)
	}
	rows, err := csv.NewReader(&cbuf).ReadAll()
	if err != nil || len(rows) != 6 || strings.Join(rows[0], ",") != strings.Join(CSVHeader, ",") {
		t.Errorf("CSV: %v %v", err, rows)
	}
	_ = finding.CheckHash
}
