package deststate

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestLockNamesHolder: a second Open of a tree in use fails with
// ErrLocked, naming the command and process that hold it, and the path
// absolute; once closed, the tree opens again.
func TestLockNamesHolder(t *testing.T) {
	t.Parallel()
	if runtime.GOOS == "windows" {
		t.Skip("no flock(2): the lock only names the holder")
	}
	dir := t.TempDir()
	rel, err := filepath.Rel(mustWd(t), dir)
	if err != nil {
		t.Fatal(err)
	}
	d, err := Open(rel, Options{Command: "sync"})
	if err != nil {
		t.Fatal(err)
	}
	if d.Path() != dir {
		t.Errorf("Path %q, want the absolute %q", d.Path(), dir)
	}
	_, err = Open(dir, Options{Command: "unpack"})
	var le *LockedError
	if !errors.Is(err, ErrLocked) || !errors.As(err, &le) {
		t.Fatalf("second Open: %v, want ErrLocked", err)
	}
	for _, want := range []string{dir, "rsdump sync", "pid "} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q does not say %q", err, want)
		}
	}
	d.Close()
	d2, err := Open(dir, Options{Command: "unpack"})
	if err != nil {
		t.Fatalf("after Close: %v", err)
	}
	d2.Close()
}

func mustWd(t *testing.T) string {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return wd
}

// TestSaveAmendDry: Amend changes what the run sees and is written by the
// next Save only; a dry run writes nothing at all, creates nothing, and
// follows its saves; Fresh tells a tree rsdump never wrote in.
func TestSaveAmendDry(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	d, err := Open(dir, Options{Command: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if !d.Fresh() || d.Saved() {
		t.Errorf("new tree: fresh %v saved %v", d.Fresh(), d.Saved())
	}
	d.Amend(func(s *State) { s.Sync = &SyncInfo{Source: "http://127.0.0.1/"} })
	if st, _ := Read(dir); st.Sync != nil {
		t.Errorf("Amend wrote the state: %+v", st)
	}
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if err := d.Update(func(s *State) { s.ResourceDumpAt = at }); err != nil {
		t.Fatal(err)
	}
	d.Close()
	st, err := Read(dir)
	if err != nil || st.Sync == nil || !st.Since().Equal(at) {
		t.Fatalf("saved: %+v %v", st, err)
	}

	d, err = Open(dir, Options{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if d.Fresh() {
		t.Errorf("a tree with a state is not fresh")
	}
	later := at.Add(time.Hour)
	if err := d.Update(func(s *State) { s.ChangeDumpUntil = later }); err != nil {
		t.Fatal(err)
	}
	if !d.State().Since().Equal(later) {
		t.Errorf("the dry run does not follow its own save: %v", d.State().Since())
	}
	if st, _ := Read(dir); !st.Since().Equal(at) {
		t.Errorf("the dry run wrote the state: %+v", st)
	}
	missing := filepath.Join(t.TempDir(), "none")
	dd, err := Open(missing, Options{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	dd.Close()
	if _, err := os.Stat(missing); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a dry run created %s", missing)
	}
}

// WalkTree gives the tree's files by slash path, in order, without
// rsdump's state directory (a file or directory of that name deeper down
// is the Source's), and hands fn a directory it cannot read.
func TestWalkTree(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, f := range []string{"b/.rsdump/x", "a", "c/d/e", DirName + "/state.json", "locked/f"} {
		p := filepath.Join(dir, filepath.FromSlash(f))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(filepath.Join(dir, "locked"), 0); err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(filepath.Join(dir, "locked"), 0o755)
	var files, failed []string
	err := WalkTree(context.Background(), dir, func(rel string, d fs.DirEntry, err error) error {
		if err != nil {
			failed = append(failed, rel)
			return nil
		}
		files = append(files, rel)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want, wantFailed := []string{"a", "b/.rsdump/x", "c/d/e"}, []string{"locked"}
	if os.Geteuid() == 0 { // root reads the directory all the same
		want, wantFailed = append(want, "locked/f"), nil
	}
	if !slices.Equal(files, want) || !slices.Equal(failed, wantFailed) {
		t.Errorf("files %q, unreadable %q; want %q, %q", files, failed, want, wantFailed)
	}
	stop := errors.New("stop")
	if err := WalkTree(context.Background(), dir, func(string, fs.DirEntry, error) error { return stop }); err != stop {
		t.Errorf("fn's error: walk returned %v", err)
	}
}

// Saving the state as it is writes nothing and leaves Saved false: a
// run that changed nothing leaves state.json as it was, its file too.
func TestSaveSameStateWritesNothing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	d, err := Open(dir, Options{Command: "sync"})
	if err != nil {
		t.Fatal(err)
	}
	s := d.State()
	s.ResourceDumpAt = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if err := d.Save(s); err != nil || !d.Saved() {
		t.Fatalf("first save: %v, saved %v", err, d.Saved())
	}
	d.Close()
	// The same state in another layout (compact, as a hand or an earlier
	// rsdump may have written it) is the same state.
	name := filepath.Join(dir, DirName, stateName)
	compact := []byte(`{"version":1,"resourcedump_at":"2026-01-01T00:00:00Z"}`)
	if err := os.WriteFile(name, compact, 0o644); err != nil {
		t.Fatal(err)
	}
	d, err = Open(dir, Options{Command: "sync"})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.Save(d.State()); err != nil || d.Saved() {
		t.Fatalf("same state: %v, saved %v", err, d.Saved())
	}
	if b, _ := os.ReadFile(name); string(b) != string(compact) {
		t.Errorf("state.json written again:\n%s", b)
	}
	s = d.State()
	s.Pending = true
	if err := d.Save(s); err != nil || !d.Saved() {
		t.Fatalf("changed state: %v, saved %v", err, d.Saved())
	}
}
