package replica_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/rsdump/rsdump/deststate"
	"github.com/rsdump/rsdump/pack"
	"github.com/rsdump/rsdump/replica"
)

// syncState reads what the tree's state records of its Source.
func syncState(t *testing.T, dir string) deststate.SyncInfo {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, ".rsdump", "state.json"))
	if err != nil {
		t.Fatal(err)
	}
	var st struct{ Sync *deststate.SyncInfo }
	if err := json.Unmarshal(b, &st); err != nil || st.Sync == nil {
		t.Fatalf("state.json: %v, %s", err, b)
	}
	return *st.Sync
}

// TestNoOpRecordsNothingGiven: a sync that brings nothing into the tree
// records that it ran, and not the base URL or Source address it was
// given: a wrong --base-url on an up-to-date copy does not become what
// the next plain sync uses.
func TestNoOpRecordsNothingGiven(t *testing.T) {
	t.Parallel()
	s := newSource(t, files(3, 50))
	s.packDump(pack.Options{})
	dst := t.TempDir()
	syncRun(t, s.srv.URL+"/", dst, replica.Options{})
	before := syncState(t, dst)
	if before.BaseURL != s.base {
		t.Fatalf("base URL recorded %q, want %q", before.BaseURL, s.base)
	}
	res, fs, _ := syncRun(t, s.srv.URL+"/capabilitylist.xml", dst, replica.Options{BaseURL: "http://127.0.0.1:1/wrong/"})
	if res.Written != 0 || len(res.Steps) != 0 {
		t.Fatalf("a sync of an up-to-date copy did something: %+v\n%s", res, problems(fs))
	}
	after := syncState(t, dst)
	if after.BaseURL != before.BaseURL || after.Source != before.Source || !after.LastRun.After(before.LastRun) {
		t.Errorf("a no-op sync recorded %+v, want the Source and base URL of %+v and a later run", after, before)
	}
	// The next plain sync works with what was recorded.
	if res, fs, _ := syncRun(t, "", dst, replica.Options{}); res.Problems() != 0 || res.BaseURL != s.base {
		t.Errorf("plain sync after: %+v\n%s", res, problems(fs))
	}
}
