package main

import (
	"strings"
	"testing"
	"time"
)

// TestFollowPollsWithoutHub: a Source whose hub refuses the follower's
// topic (the Capability List names a topic on another host, which serve's
// hub does not take) cannot be followed by push: the follower says the
// subscription failed, and still takes the Source's changes, by a sync
// after --poll of silence.
func TestFollowPollsWithoutHub(t *testing.T) {
	t.Parallel()
	s := newPushSource(t, pushFiles)
	// The run's notifications are refused at once (403), which pack
	// reports and which leaves its exit status 0.
	s.write("first.txt", "a change, so that the run writes its documents\n")
	if out := s.pack(false, "--changes", "--hub", s.hub(), "--topic", "http://127.0.0.2:9/elsewhere/"); !strings.Contains(out, "created") {
		t.Fatalf("pack --changes: %s", out)
	}
	f := startFollow(t, s.base+"capabilitylist.xml", "--poll", "1s")
	if e := f.waitEvent("synced"); e.Why != "start" {
		t.Fatalf("first sync: why %q, want start", e.Why)
	}
	e := f.waitEvent("subscribe failed")
	if !strings.Contains(e.Error, "403") || e.Topic != "http://127.0.0.2:9/elsewhere/framework" {
		t.Errorf("subscribe failed: topic %q, error %q: want the refused topic and the hub's 403", e.Topic, e.Error)
	}
	s.write("polled.txt", "found by a poll\n")
	start := time.Now()
	s.pack(false, "--changes", "-q")
	// A poll may come while pack runs, and find nothing yet: the one
	// after it takes the change (f.wait fails past its bound).
	f.wait("a sync by poll writing the change", func(e followLine) bool { return e.Event == "synced" && e.Why == "poll" && e.Written == 1 })
	t.Logf("the change reached the Destination by a poll %s after pack", time.Since(start).Round(time.Millisecond))
	sameTree(t, "after the poll", s.src, f.dest)
}
