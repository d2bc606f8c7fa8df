package follow

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rsdump/rsdump/notify"
	"github.com/rsdump/rsdump/pack"
	"github.com/rsdump/rsdump/resourcesync"
	"github.com/rsdump/rsdump/websub"
)

// followInto is follow into dest.
func followInto(t *testing.T, s *source, dest string, o Options) *events {
	t.Helper()
	ev := &events{more: make(chan struct{}, 1)}
	o.Events = ev.add
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Follow(ctx, resourcesync.LocationOf(s.url+"capabilitylist.xml"), dest, o) }()
	var once sync.Once
	t.Cleanup(func() {
		once.Do(func() {
			cancel()
			select {
			case <-done:
			case <-time.After(wait):
				t.Error("Follow did not stop")
			}
		})
	})
	return ev
}

// repack changes the Source's tree (a.txt changed, b.txt new, c.txt
// deleted) and packs it again, a full Resource Dump with no --changes,
// and returns the pack's result.
func (s *source) repack() *pack.Result {
	s.t.Helper()
	s.write("a.txt", "a changed")
	s.write("b.txt", "b")
	os.Remove(filepath.Join(s.src, "c.txt"))
	o := s.opts
	o.At = time.Now().UTC().Add(time.Second) // after the first pack, whatever the clock's resolution
	res, err := pack.Pack(context.Background(), s.src, s.out, o)
	if err != nil {
		s.t.Fatal(err)
	}
	return res
}

// sameFiles fails unless dir holds exactly files (its state aside).
func sameFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	got := map[string]string{}
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if d != nil && d.IsDir() && d.Name() == ".rsdump" {
			return filepath.SkipDir
		}
		if err == nil && !d.IsDir() {
			b, _ := os.ReadFile(p)
			rel, _ := filepath.Rel(dir, p)
			got[filepath.ToSlash(rel)] = string(b)
		}
		return nil
	})
	if len(got) != len(files) {
		t.Fatalf("%s holds %v, want %v", dir, got, files)
	}
	for k, v := range files {
		if got[k] != v {
			t.Fatalf("%s holds %v, want %v", dir, got, files)
		}
	}
}

// TestRepackNotifiedReachesDest: a Source that re-packs its Resource Dump
// (no --changes) and notifies its hub reaches a Destination that
// follows it: the notified sync re-bases the tree.
func TestRepackNotifiedReachesDest(t *testing.T) {
	t.Parallel()
	s := newSource(t, websub.Options{})
	s.write("c.txt", "c")
	s.pack(false)
	dest := t.TempDir()
	ev := followInto(t, s, dest, Options{})
	ev.waitFor(t, "subscriptions", 2, func(e Event) bool { return e.Kind == Subscribed })
	sameFiles(t, dest, map[string]string{"a.txt": "a", "c.txt": "c"})
	res := s.repack()
	if n := (&notify.Publisher{}).Publish(context.Background(), &res.Published); n != 0 {
		t.Fatalf("%d notifications not taken", n)
	}
	e := ev.waitFor(t, "syncs on a notification", 1, func(e Event) bool { return e.Kind == Synced && strings.Contains(e.Why, "notification") })[0]
	if e.Result.Problems() != 0 || len(e.Result.Steps) != 1 || e.Result.Steps[0].Kind != "rebase" {
		t.Fatalf("notified sync: %+v steps %+v", e.Result, e.Result.Steps)
	}
	sameFiles(t, dest, map[string]string{"a.txt": "a changed", "b.txt": "b"})
}

// TestRepackPolledReachesDest: the same, with no hub: the poll's sync
// re-bases the tree.
func TestRepackPolledReachesDest(t *testing.T) {
	t.Parallel()
	s := newSourceWith(t, websub.Options{}, false, nil)
	s.write("c.txt", "c")
	s.pack(false)
	dest := t.TempDir()
	ev := followInto(t, s, dest, Options{Poll: 200 * time.Millisecond})
	ev.waitFor(t, "first sync", 1, func(e Event) bool { return e.Kind == Synced })
	sameFiles(t, dest, map[string]string{"a.txt": "a", "c.txt": "c"})
	s.repack()
	e := ev.waitFor(t, "a polled sync that applies something", 1, func(e Event) bool {
		return e.Kind == Synced && e.Why == "poll" && len(e.Result.Steps) > 0
	})[0]
	if e.Result.Problems() != 0 || e.Result.Steps[0].Kind != "rebase" {
		t.Fatalf("polled sync: %+v steps %+v", e.Result, e.Result.Steps)
	}
	sameFiles(t, dest, map[string]string{"a.txt": "a changed", "b.txt": "b"})
}
