package main

import (
	"bufio"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestServeHub: rsdump serve --hub runs a WebSub hub at /hub, says its URL
// at startup, verifies a subscriber, delivers a Source's notification
// signed, answers the topic with it, keeps its state in DIR where it is
// not served, and keeps the subscription across a restart.
func TestServeHub(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	verified := make(chan url.Values, 10)
	delivered := make(chan *http.Request, 10)
	bodies := make(chan string, 10)
	cb := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			verified <- r.URL.Query()
			io.WriteString(w, r.URL.Query().Get("hub.challenge"))
			return
		}
		b, _ := io.ReadAll(r.Body)
		delivered <- r
		bodies <- string(b)
	}))
	defer cb.Close()

	s := startServe(t, io.Discard, dir, "--hub")
	hubURL := s.base + "hub"
	if !strings.Contains(s.lines.Text(), "WebSub hub at "+hubURL) {
		t.Errorf("startup line %q does not give the hub's URL %s", s.lines.Text(), hubURL)
	}
	logged := make(chan string, 100)
	go func(lines *bufio.Scanner) {
		for lines.Scan() {
			logged <- lines.Text()
		}
	}(s.lines)
	topic := hubURL + "/framework"
	resp, err := http.PostForm(hubURL, url.Values{"hub.mode": {"subscribe"}, "hub.topic": {topic}, "hub.callback": {cb.URL + "/cb"}, "hub.secret": {"s3cret"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("subscribe: %s", resp.Status)
	}
	select {
	case q := <-verified:
		if q.Get("hub.topic") != topic || q.Get("hub.mode") != "subscribe" {
			t.Errorf("verification %v", q)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no verification of intent")
	}
	waitLine(t, logged, "rsdump: hub: subscribed "+topic)
	if resp, err := http.PostForm(hubURL, url.Values{"hub.mode": {"subscribe"}, "hub.topic": {"http://192.0.2.1/t"}, "hub.callback": {cb.URL}}); err != nil || resp.StatusCode != http.StatusForbidden {
		t.Errorf("a topic on another host: %v %v, want 403", resp.Status, err)
	}

	notify := func(body string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, hubURL, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/xml")
		req.Header.Set("Link", "<"+topic+`>; rel="self", <`+hubURL+`>; rel="hub"`)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusAccepted {
			t.Fatalf("notification: %s", resp.Status)
		}
		var r *http.Request
		select {
		case r = <-delivered:
		case <-time.After(5 * time.Second):
			t.Fatal("no delivery")
		}
		got := <-bodies
		m := hmac.New(sha256.New, []byte("s3cret"))
		m.Write([]byte(got))
		if got != body || r.Header.Get("X-Hub-Signature") != "sha256="+hex.EncodeToString(m.Sum(nil)) || r.Header.Get("Content-Type") != "application/xml" {
			t.Errorf("delivered %q signed %q as %q", got, r.Header.Get("X-Hub-Signature"), r.Header.Get("Content-Type"))
		}
	}
	notify("<urlset>1</urlset>")
	if body := fetch(t, topic, 200); body != "<urlset>1</urlset>" {
		t.Errorf("GET of the topic: %q", body)
	}
	fetch(t, s.base+hubStateName, 404)
	if fi, err := os.Stat(filepath.Join(dir, hubStateName)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("state file: %v %v", fi, err)
	}
	if code := s.stop(t); code != exitOK {
		t.Errorf("exit %d", code)
	}

	// Started again on the same address, it still has the subscription.
	http.DefaultClient.CloseIdleConnections()
	s = startServe(t, io.Discard, dir, "--hub", "--addr", strings.TrimSuffix(strings.TrimPrefix(s.base, "http://"), "/"))
	go io.Copy(io.Discard, s.pr)
	if s.base+"hub" != hubURL {
		t.Fatalf("restarted at %s, not %s", s.base, hubURL)
	}
	notify("<urlset>2</urlset>")
	if code := s.stop(t); code != exitOK {
		t.Errorf("exit %d", code)
	}
}

func waitLine(t *testing.T, lines chan string, prefix string) {
	t.Helper()
	deadline := time.After(5 * time.Second)
	for {
		select {
		case l := <-lines:
			if strings.HasPrefix(l, prefix) {
				return
			}
		case <-deadline:
			t.Fatalf("no line starting %q", prefix)
		}
	}
}

func fetch(t *testing.T, u string, status int) string {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != status {
		t.Errorf("GET %s: %s, want %d", u, resp.Status, status)
	}
	return string(b)
}
