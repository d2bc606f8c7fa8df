package audit

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rsdump/rsdump/finding"
)

func mustFraction(t *testing.T, s string) Selection {
	sel, err := ParseFraction(s)
	if err != nil {
		t.Fatal(err)
	}
	return sel
}

// TestFractionRotation: daily runs of --fraction 1/5 over simulated days
// (the clock injected) while files are added, more bytes at once than a
// run's share: every file is checked within 5 runs of appearing and
// never waits more than 5 runs between checks (never skipped a round),
// and each run reads at least its share of the bytes.
func TestFractionRotation(t *testing.T) {
	t.Parallel()
	const n = 5
	files := sized(30, 200)
	tr := newTree(t, files)
	sel := mustFraction(t, fmt.Sprintf("1/%d", n))
	seen := map[string]int{}     // run at which a file first was in the tree
	checks := map[string][]int{} // runs that checked it
	for p := range files {
		seen[p] = 1
	}
	const runs = 24
	for run := 1; run <= runs; run++ {
		if run%4 == 0 { // a sync brings many new bytes
			add := map[string]string{}
			for i := range 6 {
				add[fmt.Sprintf("new%02d/g%d.bin", run, i)] = strings.Repeat(string(rune('a'+i)), 3000+i)
			}
			tr.write(add)
			for p, d := range add {
				files[p], seen[p] = d, run
			}
		}
		sum, c := tr.audit(sel, day0.Add(time.Duration(run)*24*time.Hour), Options{})
		var total int64
		for _, d := range files {
			total += int64(len(d))
		}
		if sum.Bytes != total || sum.CheckedBytes < sel.budget(total) || sum.Failed != 0 {
			t.Fatalf("run %d: %+v; want at least %d of %d bytes checked", run, sum, sel.budget(total), total)
		}
		for p := range c.checked() {
			checks[p] = append(checks[p], run)
		}
	}
	for _, p := range slices.Sorted(maps.Keys(files)) {
		last := seen[p] - 1 // as if checked the run before it came
		for _, r := range append(checks[p], runs+1) {
			if r == runs+1 && runs-last < n {
				break // its next turn is after the last run
			}
			if r-last > n {
				t.Errorf("%s (first seen in run %d) checked in runs %v: waited %d runs", p, seen[p], checks[p], r-last)
				break
			}
			last = r
		}
	}
}

// TestCorruptionFoundByItsRun: a byte flipped in a file is found by the
// first run of --fraction 1/4 whose share covers the file, by no run
// before it, within 4 runs; from then on every run checks it again until
// it holds.
func TestCorruptionFoundByItsRun(t *testing.T) {
	t.Parallel()
	files := map[string]string{}
	for i := range 16 {
		files[fmt.Sprintf("f%02d", i)] = strings.Repeat(fmt.Sprint(i%10), 1000)
	}
	tr := newTree(t, files)
	sel := mustFraction(t, "1/4")
	at := func(run int) time.Time { return day0.Add(time.Duration(run) * 24 * time.Hour) }
	var victim string
	for run := 1; run <= 3; run++ {
		_, c := tr.audit(sel, at(run), Options{})
		if run == 2 {
			victim = slices.Sorted(maps.Keys(c.checked()))[0] // checked in run 2: its next turn is runs away
		}
		if len(c.findings) > 0 {
			t.Fatalf("run %d: findings before any damage: %v", run, c.findings)
		}
	}
	tr.flip(victim)
	found := 0
	for run := 4; run <= 8; run++ {
		sum, c := tr.audit(sel, at(run), Options{})
		ev, checked := c.checked()[victim]
		switch {
		case checked && ev.Outcome != Failure:
			t.Fatalf("run %d checked %s and found it intact", run, victim)
		case !checked && found == 0 && sum.Failed > 0:
			t.Fatalf("run %d reported a failure without checking %s: %v", run, victim, c.findings)
		case !checked && found > 0:
			t.Fatalf("run %d: %s, found damaged in run %d, not checked again", run, victim, found)
		case checked && found == 0:
			found = run
			if len(c.findings) != 1 || c.findings[0].Path != victim || c.findings[0].Code != finding.CheckHash {
				t.Errorf("run %d findings: %v", run, c.findings)
			}
		}
	}
	if found == 0 || found > 2+4 {
		t.Fatalf("%s, last checked in run 2, found in run %d; want within 4 runs", victim, found)
	}
	t.Logf("%s, checked in run 2, damaged before run 4, found in run %d", victim, found)
}

// TestSubset: the slices K/N of a subset part the files (each in exactly
// one), and the same slice picks the same files each time.
func TestSubset(t *testing.T) {
	t.Parallel()
	files := sized(40, 10)
	tr := newTree(t, files)
	got := map[string]int{}
	for k := 1; k <= 3; k++ {
		sel, err := ParseSubset(fmt.Sprintf("%d/3", k))
		if err != nil {
			t.Fatal(err)
		}
		_, c1 := tr.audit(sel, day0, Options{})
		_, c2 := tr.audit(sel, day0.Add(time.Hour), Options{})
		if !maps.Equal(keys(c1.checked()), keys(c2.checked())) {
			t.Errorf("subset %d/3 picked other files the second time", k)
		}
		for p := range c1.checked() {
			got[p]++
		}
	}
	for p := range files {
		if got[p] != 1 {
			t.Errorf("%s in %d subsets of 3", p, got[p])
		}
	}
	for _, bad := range []string{"0/3", "4/3", "1/10001", "1", "a/b", "1/0"} {
		if _, err := ParseSubset(bad); err == nil {
			t.Errorf("ParseSubset(%q) took it", bad)
		}
	}
	if _, err := ParseSubset("10000/10000"); err != nil {
		t.Error(err)
	}
}

func keys(m map[string]Event) map[string]bool {
	out := map[string]bool{}
	for k := range m {
		out[k] = true
	}
	return out
}

// TestSinceDays: --since-days D checks the files not audited in D days,
// and those never audited.
func TestSinceDays(t *testing.T) {
	t.Parallel()
	tr := newTree(t, sized(10, 10))
	tr.audit(Selection{}, day0, Options{})
	tr.write(map[string]string{"late.txt": "new"})
	sel := Selection{Mode: Since, Days: 2}
	_, c := tr.audit(sel, day0.Add(24*time.Hour), Options{})
	if got := keys(c.checked()); len(got) != 1 || !got["late.txt"] {
		t.Errorf("a day later: checked %v, want late.txt alone", got)
	}
	_, c = tr.audit(sel, day0.Add(50*time.Hour), Options{})
	if got := keys(c.checked()); len(got) != 10 || got["late.txt"] {
		t.Errorf("50 hours later: checked %v, want the 10 files audited at day 0", got)
	}
}
