package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rsdump/rsdump/internal/verifytest"
)

// The push end to end (issue 27, point 4), all on loopback: a Source
// publishing with serve --hub and pack --hub, a Destination following it
// with sync --follow --poll 1h, so that anything the Destination does
// within a test was set off by a notification, never by a poll.

// followWait bounds every wait for an event of the follower; pushWithin
// is the time a change takes from pack --changes to the Destination.
const (
	followWait = 10 * time.Second
	pushWithin = 5 * time.Second
)

// pushSource is a Source: its tree, the directory pack writes and serve
// --hub publishes, and the serve command.
type pushSource struct {
	t        *testing.T
	tree     *srcTree
	src, out string // the tree's directory, and pack's
	addr     string // host:port serve listens on
	base     string // http://addr/
	serve    *served
	hubLines chan string // serve's stderr, line by line
}

func newPushSource(t *testing.T, files map[string]string) *pushSource {
	t.Helper()
	s := &pushSource{t: t, tree: &srcTree{t: t, dir: t.TempDir()}, out: t.TempDir()}
	s.src = s.tree.dir
	for rel, data := range files {
		s.write(rel, data)
	}
	s.start("127.0.0.1:0")
	// After the follower's cleanup, which unsubscribes: serve stops, its
	// hub done with the state file, before the directories go.
	t.Cleanup(func() {
		if s.serve != nil {
			s.serve.stop(t)
		}
	})
	s.pack(true)
	return s
}

// start runs serve --hub on addr, and keeps reading its stderr.
func (s *pushSource) start(addr string) {
	s.t.Helper()
	s.serve = startServe(s.t, io.Discard, s.out, "--hub", "--addr", addr, "--quiet")
	s.base = s.serve.base
	s.addr = strings.TrimSuffix(strings.TrimPrefix(s.base, "http://"), "/")
	s.hubLines = make(chan string, 1000)
	go func(lines *bufio.Scanner, c chan string) {
		for lines.Scan() {
			select {
			case c <- lines.Text():
			default:
			}
		}
	}(s.serve.lines, s.hubLines)
}

// restart stops serve, as a signal does, and starts it again on the same
// address and directory.
func (s *pushSource) restart() {
	s.t.Helper()
	code := s.serve.stop(s.t)
	s.serve = nil
	if code != exitOK {
		s.t.Fatalf("serve stopped with exit %d", code)
	}
	http.DefaultClient.CloseIdleConnections()
	s.start(s.addr)
}

// write writes a file of the Source's, with the time now as its mtime.
func (s *pushSource) write(rel, data string) {
	s.t.Helper()
	s.tree.now = time.Now()
	s.tree.write(rel, data)
}

func (s *pushSource) remove(rel string) {
	s.t.Helper()
	s.tree.remove(rel)
}

func (s *pushSource) hub() string { return s.base + "hub" }

// pack publishes the Source: a Resource Dump the first time, a Change
// Dump after; notifying the hub, with change notifications, when notify
// is set. It returns pack's output.
func (s *pushSource) pack(notify bool, args ...string) string {
	s.t.Helper()
	args = append([]string{"pack", s.src, "-o", s.out, "--base-url", s.base + "data/", "--dump-url", s.base}, args...)
	if notify {
		args = append(args, "--hub", s.hub(), "--change-notification")
	}
	return rsdumpOK(s.t, args...)
}

// hubState is the hub's state file: its subscriptions, as a restarted
// hub would read them from its log of records (websub's state file).
func (s *pushSource) hubState() []struct{ Topic, Callback, Secret string } {
	s.t.Helper()
	b, err := os.ReadFile(filepath.Join(s.out, hubStateName))
	if err != nil {
		s.t.Fatal(err)
	}
	type sub struct{ Topic, Callback, Secret string }
	subs := map[[2]string]sub{}
	for i, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var r struct {
			Sub *struct {
				Topic, Callback string
				Secret          []byte
			}
			Unsub *struct{ Topic, Callback string }
		}
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			s.t.Fatalf("%s: line %d: %v", hubStateName, i+1, err)
		}
		switch {
		case r.Sub != nil:
			subs[[2]string{r.Sub.Topic, r.Sub.Callback}] = sub{r.Sub.Topic, r.Sub.Callback, string(r.Sub.Secret)}
		case r.Unsub != nil:
			delete(subs, [2]string{r.Unsub.Topic, r.Unsub.Callback})
		}
	}
	var out []struct{ Topic, Callback, Secret string }
	for _, v := range subs {
		out = append(out, v)
	}
	return out
}

// waitHubLine waits for a line of the hub's that starts with prefix.
func (s *pushSource) waitHubLine(prefix string) {
	s.t.Helper()
	deadline := time.After(followWait)
	for {
		select {
		case l := <-s.hubLines:
			if strings.HasPrefix(l, prefix) {
				return
			}
		case <-deadline:
			s.t.Fatalf("the hub logged no line starting %q", prefix)
		}
	}
}

// follower is a running sync --follow --json: its events, in order.
type follower struct {
	t      *testing.T
	dest   string
	cancel context.CancelFunc
	done   chan int
	stderr *lockedBuffer

	mu     sync.Mutex
	events []followLine
	more   chan struct{} // a token each time an event comes
	next   int           // the first event wait has not looked at
}

type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// startFollow runs sync SOURCE --dest DEST --follow --poll 1h --json in
// process, with a context its stop cancels as SIGINT does.
func startFollow(t *testing.T, source string, args ...string) *follower {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	f := &follower{t: t, dest: t.TempDir(), cancel: cancel, done: make(chan int, 1), stderr: &lockedBuffer{}, more: make(chan struct{}, 1)}
	pr, pw := io.Pipe()
	args = append([]string{"sync", source, "--dest", f.dest, "--follow", "--poll", "1h", "--json"}, args...)
	go func() {
		f.done <- run(ctx, args, pw, f.stderr)
		pw.Close()
	}()
	go func() {
		dec := json.NewDecoder(pr)
		for {
			var e followLine
			if err := dec.Decode(&e); err != nil {
				io.Copy(io.Discard, pr)
				return
			}
			f.mu.Lock()
			f.events = append(f.events, e)
			f.mu.Unlock()
			select {
			case f.more <- struct{}{}:
			default:
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-f.done:
		case <-time.After(followWait):
			t.Error("sync --follow did not stop")
		}
	})
	return f
}

// wait returns the first event after the ones waited for already that
// ok takes, failing the test after followWait.
func (f *follower) wait(what string, ok func(followLine) bool) followLine {
	f.t.Helper()
	deadline := time.After(followWait)
	for {
		f.mu.Lock()
		for f.next < len(f.events) {
			e := f.events[f.next]
			f.next++
			if ok(e) {
				f.mu.Unlock()
				return e
			}
		}
		f.mu.Unlock()
		select {
		case <-f.more:
		case <-deadline:
			f.t.Fatalf("no %s event within %s; events:\n%s\nstderr:\n%s", what, followWait, f.log(), f.stderr.String())
		}
	}
}

// find returns the first event from the mark-th on that ok takes,
// whether it came already or is still to come, in whatever order the
// events of a run come.
func (f *follower) find(mark int, what string, ok func(followLine) bool) followLine {
	f.t.Helper()
	if i := slices.IndexFunc(f.since(mark), ok); i >= 0 {
		return f.since(mark)[i]
	}
	return f.wait(what, ok)
}

func (f *follower) waitEvent(event string) followLine {
	f.t.Helper()
	return f.wait(event, func(e followLine) bool { return e.Event == event })
}

// since returns the events from the i-th on.
func (f *follower) since(i int) []followLine {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]followLine(nil), f.events[i:]...)
}

func (f *follower) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.events)
}

func (f *follower) log() string {
	var b strings.Builder
	for _, e := range f.since(0) {
		b.WriteString("  " + e.Event + ": " + e.Text + "\n")
	}
	return b.String()
}

func (f *follower) kinds(from int, event string) []followLine {
	var out []followLine
	for _, e := range f.since(from) {
		if e.Event == event {
			out = append(out, e)
		}
	}
	return out
}

// stop cancels the command's context, as SIGINT does, and returns its
// exit code.
func (f *follower) stop() int {
	f.t.Helper()
	f.cancel()
	select {
	case code := <-f.done:
		f.done <- code // for the cleanup
		return code
	case <-time.After(followWait):
		f.t.Fatal("sync --follow did not stop")
	}
	return -1
}

// follow starts a Destination following s and waits until it has
// synced and subscribed to both topics.
func (s *pushSource) follow() *follower {
	s.t.Helper()
	f := startFollow(s.t, s.base+"capabilitylist.xml")
	if e := f.waitEvent("synced"); e.Why != "start" {
		s.t.Errorf("first sync: why %q, want start", e.Why)
	}
	topics := map[string]bool{}
	for range 2 {
		e := f.waitEvent("subscribed")
		if e.Hub != s.hub() {
			s.t.Errorf("subscribed at %q, want %q", e.Hub, s.hub())
		}
		topics[e.Topic] = true
	}
	if want := map[string]bool{s.hub() + "/framework": true, s.hub() + "/changes": true}; !maps.Equal(topics, want) {
		s.t.Errorf("subscribed to %v, want %v", topics, want)
	}
	for range 2 { // the hub saves a subscription after its verification
		s.waitHubLine("rsdump: hub: subscribed ")
	}
	sameTree(s.t, "after the first sync", s.src, f.dest)
	return f
}

// pushed runs pack --changes (notifying, when notify is set) and returns
// how long the Destination took to equal the Source after pack began, or
// fails the test when it does not within pushWithin.
func (s *pushSource) pushed(f *follower, notify bool) time.Duration {
	s.t.Helper()
	start := time.Now()
	s.pack(notify, "--changes", "-q")
	want := treeFiles(s.t, s.src)
	for {
		// The follower may be deleting or replacing a file as the tree is
		// read: such a look fails, and the next one is taken.
		if got, err := verifytest.TryReadTreeFiles(f.dest); err == nil && maps.Equal(regularFiles(got), want) {
			return time.Since(start)
		}
		if time.Since(start) > pushWithin {
			sameTree(s.t, "the Destination "+pushWithin.String()+" after pack --changes", s.src, f.dest)
			s.t.Fatalf("events:\n%s", f.log())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// isNotified is a sync a notification set off.
func isNotified(e followLine) bool {
	return e.Event == "synced" && strings.Contains(e.Why, "notification")
}

var pushFiles = map[string]string{"a.txt": "a\n", "gone.txt": "to be deleted\n", "dir/b.txt": "b\n", "keep/k.txt": "unchanged\n"}

// TestFollowEndToEnd: after a change and pack --changes --hub, the
// Destination following with --poll 1h equals the Source within 5 s,
// by a sync a notification set off; stopped as by SIGINT, it exits 0,
// unsubscribed from both topics, and the hub keeps no subscription.
func TestFollowEndToEnd(t *testing.T) {
	s := newPushSource(t, pushFiles)
	f := s.follow()
	start := f.kinds(0, "synced")[0]
	if subs := s.hubState(); len(subs) != 2 {
		t.Errorf("the hub's state has %d subscriptions, want 2: %v", len(subs), subs)
	}

	mark := f.count()
	s.write("new/c.txt", "created\n")
	s.write("a.txt", "a, updated to a longer content\n")
	s.remove("gone.txt")
	took := s.pushed(f, true)
	e := f.find(mark, "synced by a notification", isNotified)
	t.Logf("the Destination equals the Source %s after pack --changes began, synced on a %s", took.Round(time.Millisecond), e.Why)
	if e.Why == "change notification after a gap" {
		t.Errorf("a gap where none was: %s\n%s", e.Text, f.log())
	}
	if e.Written != 2 || e.Deleted != 1 {
		t.Errorf("the notified sync wrote %d and deleted %d, want 2 and 1: %s", e.Written, e.Deleted, e.Text)
	}
	for _, e := range f.since(mark) {
		if e.Event == "polling" || e.Event == "gap" || e.Event == "ignored" || e.Event == "sync failed" || e.Event == "subscribed" {
			t.Errorf("unexpected %s: %s", e.Event, e.Text)
		}
	}
	// The run's change notification starts where the first sync left
	// the tree: no gap.
	n := f.find(mark, "change notification", func(e followLine) bool {
		return e.Event == "notified" && e.Capability == "change-notification"
	})
	if n.From != start.Until || n.Until == "" || n.Topic != s.hub()+"/changes" {
		t.Errorf("change notification %+v, want one from %s, where the first sync left the tree", n, start.Until)
	}

	mark = f.count()
	if code := f.stop(); code != exitOK {
		t.Errorf("sync --follow stopped with exit %d\n%s", code, f.stderr.String())
	}
	unsub := map[string]bool{}
	for _, e := range f.kinds(mark, "unsubscribed") {
		if e.Error != "" {
			t.Errorf("unsubscribed with an error: %s", e.Text)
		}
		unsub[e.Topic] = true
	}
	if want := map[string]bool{s.hub() + "/framework": true, s.hub() + "/changes": true}; !maps.Equal(unsub, want) {
		t.Errorf("unsubscribed from %v, want %v\n%s", unsub, want, f.log())
	}
	for range 2 {
		s.waitHubLine("rsdump: hub: unsubscribed ")
	}
	if subs := s.hubState(); len(subs) != 0 {
		t.Errorf("after sync --follow stopped, the hub's state has %d subscriptions: %v", len(subs), subs)
	}
}

// TestFollowGap: a run whose notifications never reach the hub (pack
// --changes without --hub: dropped) is caught up with by the next
// notified run: its change notification starts after what the tree is up
// to, a gap, and the sync brings both runs' changes.
func TestFollowGap(t *testing.T) {
	t.Parallel()
	s := newPushSource(t, pushFiles)
	f := s.follow()

	mark := f.count()
	s.write("dropped.txt", "changed in the run whose notification was dropped\n")
	s.remove("gone.txt")
	s.pack(false, "--changes", "-q")
	time.Sleep(200 * time.Millisecond)
	if got := f.since(mark); len(got) != 0 {
		t.Fatalf("events with no notification sent:\n%s", f.log())
	}

	s.write("dir/b.txt", "b, updated in the notified run\n")
	s.pushed(f, true)
	gap := f.waitEvent("gap")
	if gap.From == "" || gap.Until == "" || gap.Why == "" {
		t.Errorf("gap without its interval or what follows: %+v", gap)
	}
	// The run's framework notification most often comes first and pulls
	// both runs' changes; its change notification then shows the gap.
	e := f.find(mark, "synced by a notification", isNotified)
	if e.Written != 2 || e.Deleted != 1 {
		t.Errorf("the sync after the gap wrote %d and deleted %d, want 2 and 1 (both runs): %s\n%s", e.Written, e.Deleted, e.Text, f.log())
	}
	sameTree(t, "after the gap", s.src, f.dest)
}

// TestFollowHubRestart: serve --hub stopped and started again on the
// same address and directory still has the follower's subscriptions: the
// next run's notification reaches it, with no new subscription.
func TestFollowHubRestart(t *testing.T) {
	t.Parallel()
	s := newPushSource(t, pushFiles)
	f := s.follow()
	mark := f.count()
	s.restart()

	s.write("after-restart.txt", "created after the hub restarted\n")
	s.pushed(f, true)
	f.find(mark, "synced by a notification", isNotified)
	if got := f.kinds(mark, "subscribed"); len(got) != 0 {
		t.Errorf("subscribed again after the restart: %v", got)
	}
	if got := f.kinds(0, "subscribed"); len(got) != 2 {
		t.Errorf("%d subscribed events, want the first 2", len(got))
	}
	for _, e := range f.kinds(mark, "polling") {
		t.Errorf("polled: %s", e.Text)
	}
}

// TestFollowForged: notifications posted to the follower's callbacks
// unsigned or signed with another secret are ignored: no sync, the tree
// left as it was, though the Source changed.
func TestFollowForged(t *testing.T) {
	t.Parallel()
	s := newPushSource(t, pushFiles)
	f := s.follow()
	subs := s.hubState()
	if len(subs) != 2 {
		t.Fatalf("the hub's state has %d subscriptions, want 2", len(subs))
	}
	before := treeFiles(t, f.dest)

	// The Source changes, and publishes without notifying: a forged
	// notification that set off a sync would show.
	s.write("forged.txt", "would be fetched by a sync\n")
	s.pack(false, "--changes", "-q")
	mark := f.count()
	body := `<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/">
<rs:ln rel="up" href="` + s.base + `capabilitylist.xml"/>
<rs:md capability="change-notification" from="2099-01-01T00:00:00Z" until="2099-01-02T00:00:00Z"/>
<url><loc>` + s.base + `data/forged.txt</loc><rs:md change="created" datetime="2099-01-01T12:00:00Z"/></url>
</urlset>
`
	posts := 0
	for _, sub := range subs {
		for _, sig := range []string{"", "sha256=" + strings.Repeat("0", 64), "sha1=" + strings.Repeat("0", 40)} {
			req, err := http.NewRequest(http.MethodPost, sub.Callback, strings.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/xml")
			req.Header.Set("Link", "<"+sub.Topic+`>; rel="self", <`+s.hub()+`>; rel="hub"`)
			if sig != "" {
				req.Header.Set("X-Hub-Signature", sig)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode/100 != 2 {
				t.Errorf("forged POST to %s (%q): %s, want 2xx (a forger learns nothing)", sub.Callback, sig, resp.Status)
			}
			posts++
		}
	}
	for range posts {
		if e := f.waitEvent("ignored"); !strings.Contains(e.Error, "X-Hub-Signature") {
			t.Errorf("ignored, but not for its signature: %s", e.Text)
		}
	}
	time.Sleep(300 * time.Millisecond) // a sync the forgeries set off would have begun
	for _, e := range f.since(mark) {
		if e.Event != "ignored" {
			t.Errorf("after forged notifications: %s: %s", e.Event, e.Text)
		}
	}
	if after := treeFiles(t, f.dest); !maps.Equal(after, before) {
		t.Errorf("forged notifications changed the tree: %v, was %v", after, before)
	}
}
