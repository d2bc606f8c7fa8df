package notify

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rsdump/rsdump/finding"
	"github.com/rsdump/rsdump/internal/httpc"
	"github.com/rsdump/rsdump/internal/sharedtest"
	"github.com/rsdump/rsdump/layout"
	"github.com/rsdump/rsdump/metalink/httpheader"
	"github.com/rsdump/rsdump/pack"
	"github.com/rsdump/rsdump/resourcesync"
)

// hub records what is posted to it, answering status.
type hub struct {
	srv    *httptest.Server
	mu     sync.Mutex
	posts  []post
	status int
}

type post struct {
	ctype string
	links []httpheader.Link
	body  []byte
}

func newHub(t *testing.T, status int) *hub {
	h := &hub{status: status}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		h.mu.Lock()
		h.posts = append(h.posts, post{r.Header.Get("Content-Type"), httpheader.ParseLinks(r.Header.Values("Link"), ""), b})
		h.mu.Unlock()
		w.WriteHeader(h.status)
	}))
	t.Cleanup(h.srv.Close)
	return h
}

func (h *hub) taken() []post {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]post(nil), h.posts...)
}

// source is a tree pack publishes with the hub's channels.
type source struct {
	t        *testing.T
	src, out string
	opts     pack.Options
	now      time.Time
}

func newSource(t *testing.T, h *hub, files int) *source {
	s := &source{t: t, src: t.TempDir(), out: t.TempDir(), now: time.Now().Add(-time.Hour)}
	s.opts = pack.Options{BaseURL: "http://127.0.0.1:9/data/", DumpURL: "http://127.0.0.1:9/",
		Channels: layout.Channels{Hub: h.srv.URL + "/hub", ChangeNotification: true}}
	for i := range files {
		s.write(fmt.Sprintf("f%03d.txt", i), "first")
	}
	return s
}

func (s *source) write(name, data string) {
	p := filepath.Join(s.src, name)
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		s.t.Fatal(err)
	}
	s.now = s.now.Add(time.Second)
	os.Chtimes(p, s.now, s.now)
}

func (s *source) pack(changes bool) *layout.Published {
	o := s.opts
	o.Changes = changes
	res, err := pack.Pack(context.Background(), s.src, s.out, o)
	if err != nil {
		s.t.Fatal(err)
	}
	return &res.Published
}

// check validates a notification against the ResourceSync schema and
// reads it.
func check(t *testing.T, p post, topic string, h *hub, capList string) (resourcesync.Header, []resourcesync.URL) {
	t.Helper()
	if p.ctype != "application/xml" {
		t.Errorf("Content-Type %q", p.ctype)
	}
	rels := map[string]string{}
	for _, l := range p.links {
		rels[strings.Join(l.Rel, " ")] = l.URL
	}
	if rels["self"] != topic || rels["hub"] != h.srv.URL+"/hub" || rels["resourcesync"] != capList {
		t.Errorf("Link rels %v: want self %s, hub %s/hub, resourcesync %s", rels, topic, h.srv.URL, capList)
	}
	f := filepath.Join(t.TempDir(), "n.xml")
	os.WriteFile(f, p.body, 0o644)
	sharedtest.Xmllint(t, f, "rs-urlset-1.1.xsd")
	dec, err := resourcesync.NewDecoder(strings.NewReader(string(p.body)))
	if err != nil {
		t.Fatal(err)
	}
	var urls []resourcesync.URL
	dec.Each(func(u resourcesync.URL) error { urls = append(urls, u); return nil })
	return dec.Header(), urls
}

func TestFrameworkNotification(t *testing.T) {
	t.Parallel()
	h := newHub(t, http.StatusAccepted)
	s := newSource(t, h, 3)
	res := s.pack(false)
	if n := (&Publisher{}).Publish(context.Background(), res); n != 0 {
		t.Fatalf("%d notifications failed", n)
	}
	posts := h.taken()
	if len(posts) != 1 { // no change notification for a Resource Dump
		t.Fatalf("%d posts, want 1", len(posts))
	}
	hd, urls := check(t, posts[0], h.srv.URL+"/hub/framework", h, res.CapabilityList)
	if hd.MD.Capability != resourcesync.CapFrameworkNotification || len(hd.Links) != 1 || hd.Links[0].Rel != "up" || hd.Links[0].Href != res.CapabilityList {
		t.Errorf("header %+v", hd)
	}
	got := map[string]string{}
	for _, u := range urls {
		got[u.MD.Capability] = u.MD.Change
		if u.MD.Datetime.IsZero() {
			t.Errorf("%s: no datetime", u.Loc)
		}
	}
	want := map[string]string{"resourcelist": "created", "resourcedump": "created", "capabilitylist": "created"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("framework notification tells %v, want %v", got, want)
	}

	// The Capability List advertises both channels with their hub, and
	// is valid.
	capList := filepath.Join(s.out, layout.CapabilityListName)
	sharedtest.Xmllint(t, capList, "rs-urlset-1.1.xsd")
	b, _ := os.ReadFile(capList)
	for _, topic := range []string{"/hub/framework</loc><rs:md capability=\"framework-notification\"/><rs:ln rel=\"hub\" href=\"" + h.srv.URL + "/hub\"/>",
		"/hub/changes</loc><rs:md capability=\"change-notification\"/><rs:ln rel=\"hub\" href=\"" + h.srv.URL + "/hub\"/>"} {
		if !strings.Contains(string(b), topic) {
			t.Errorf("capability list lacks %s:\n%s", topic, b)
		}
	}
}

// TestChangeNotifications: a --changes run tells of its documents (the
// Capability List, unchanged, not) and sends its changes, and only its
// own, in notifications of at most chunkSize entries whose intervals
// follow each other from the run's from to its until.
func TestChangeNotifications(t *testing.T) {
	defer func(n int) { chunkSize = n }(chunkSize)
	chunkSize = 2
	h := newHub(t, http.StatusAccepted)
	s := newSource(t, h, 6)
	s.pack(false)
	s.write("f000.txt", "second")
	s.pack(true)
	for i := range 5 {
		s.write(fmt.Sprintf("f%03d.txt", i+1), "third")
	}
	res := s.pack(true)
	before := len(h.taken())
	if n := (&Publisher{}).Publish(context.Background(), res); n != 0 {
		t.Fatalf("%d notifications failed", n)
	}
	posts := h.taken()[before:]
	if len(posts) != 4 { // the framework notification, and 5 changes in 3
		t.Fatalf("%d posts, want 4", len(posts))
	}
	_, docs := check(t, posts[0], h.srv.URL+"/hub/framework", h, res.CapabilityList)
	for _, d := range docs {
		if d.MD.Capability == resourcesync.CapCapabilityList {
			t.Errorf("the Capability List, written again as it was, is told of as %s", d.MD.Change)
		}
	}
	from := res.From
	n := 0
	for i, p := range posts[1:] {
		hd, urls := check(t, p, h.srv.URL+"/hub/changes", h, res.CapabilityList)
		if hd.MD.Capability != resourcesync.CapChangeNotification || !hd.MD.From.Equal(from) {
			t.Errorf("change notification %d: %s from %s, want change-notification from %s", i, hd.MD.Capability, hd.MD.From, from)
		}
		for _, u := range urls {
			// Changes at one time may be split between notifications: the
			// interval is closed at both ends, but for the run's from.
			if when, _ := u.ChangeTime(); !when.After(res.From) || when.Before(hd.MD.From) || when.After(hd.MD.Until) || u.MD.Hash == "" {
				t.Errorf("entry %s at %s outside [%s, %s], or without hash", u.Loc, when, hd.MD.From, hd.MD.Until)
			}
			if strings.HasSuffix(u.Loc, "f000.txt") {
				t.Errorf("the earlier run's change %s sent again", u.Loc)
			}
		}
		from, n = hd.MD.Until, n+len(urls)
	}
	if n != 5 || !from.Equal(res.Until) {
		t.Errorf("%d changes ending at %s, want 5 ending at the run's until %s", n, from, res.Until)
	}
}

// TestUndeliveredNotification: a hub that keeps failing is tried again,
// then reported; the run's documents are in place all the same.
func TestUndeliveredNotification(t *testing.T) {
	t.Parallel()
	h := newHub(t, http.StatusServiceUnavailable)
	s := newSource(t, h, 1)
	res := s.pack(false)
	var warnings []finding.Finding
	fast := httpc.New(httpc.Options{Retry: httpc.Retry{Base: 10 * time.Millisecond, Attempts: 3}})
	p := &Publisher{Client: fast, Events: func(e finding.Event) {
		if f, ok := e.(finding.Finding); ok {
			warnings = append(warnings, f)
		}
	}}
	if n := p.Publish(context.Background(), res); n != 1 {
		t.Fatalf("%d failed, want 1", n)
	}
	if n := len(h.taken()); n != 3 {
		t.Errorf("the hub was asked %d times, want 3 attempts", n)
	}
	if len(warnings) != 1 || warnings[0].Severity != finding.Warning || !strings.Contains(warnings[0].String(), "503") ||
		warnings[0].URI != s.opts.Channels.Hub+"/framework" {
		t.Errorf("warnings %v: want one naming the topic and the 503", warnings)
	}
	if _, err := os.Stat(filepath.Join(s.out, layout.DumpName)); err != nil {
		t.Error(err)
	}
}

// TestMergeTellsItsDocuments: the documents of a sharded dump are written
// by the merge, which tells of them.
func TestMergeTellsItsDocuments(t *testing.T) {
	t.Parallel()
	h := newHub(t, http.StatusAccepted)
	s := newSource(t, h, 2)
	shard := s.opts
	shard.Channels, shard.Shard, shard.Shards = layout.Channels{}, 1, 1
	if _, err := pack.Pack(context.Background(), s.src, s.out, shard); err != nil {
		t.Fatal(err)
	}
	res, err := pack.Merge(context.Background(), s.out, s.opts)
	if err != nil {
		t.Fatal(err)
	}
	if n := (&Publisher{}).Publish(context.Background(), &res.Published); n != 0 || len(h.taken()) != 1 {
		t.Fatalf("%d failed, %d posted; want 0 and 1", n, len(h.taken()))
	}
	_, urls := check(t, h.taken()[0], h.srv.URL+"/hub/framework", h, res.CapabilityList)
	var caps []string
	for _, u := range urls {
		caps = append(caps, u.MD.Capability)
	}
	if got := strings.Join(caps, " "); !strings.Contains(got, "resourcedump") || !strings.Contains(got, "resourcelist") {
		t.Errorf("the merge tells of %q, want its Resource Dump and Resource List", got)
	}
}
