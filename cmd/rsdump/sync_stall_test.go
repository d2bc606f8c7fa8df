package main

import (
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rsdump/rsdump/deststate"
	"github.com/rsdump/rsdump/internal/httpc/httpctest"
	"github.com/rsdump/rsdump/internal/verifytest"
	"github.com/rsdump/rsdump/resourcesync"
)

// TestSyncDrippingResource: rsdump sync of a Resource List whose one
// resource drips a byte a second exits 1 within about --stall-timeout
// plus the speed window, naming the resource's URL and its speed.
func TestSyncDrippingResource(t *testing.T) {
	speedWindow = 2 * time.Second
	defer func() { speedWindow = 0 }()
	out := t.TempDir()
	data := map[string]string{"a.txt": "arrives", "slow.txt": strings.Repeat("s", 30)}
	verifytest.WriteFiles(t, filepath.Join(out, "res"), data)
	files := http.FileServer(http.Dir(out))
	srv := httptest.NewServer(httpctest.DripPath(files, "/res/slow.txt", time.Second))
	defer srv.Close()
	var urls []resourcesync.URL
	for _, rel := range []string{"a.txt", "slow.txt"} {
		d := []byte(data[rel])
		urls = append(urls, resourcesync.URL{Loc: srv.URL + "/res/" + rel,
			MD: &resourcesync.MD{Hash: "sha-256:" + verifytest.SHA256(d), Length: resourcesync.Int64(int64(len(d)))}})
	}
	verifytest.WriteDoc(t, filepath.Join(out, "resourcelist.xml"),
		resourcesync.Header{Kind: resourcesync.URLSet, MD: resourcesync.MD{Capability: resourcesync.CapResourceList, At: verifytest.Time}}, urls)
	start := time.Now()
	dst := t.TempDir()
	code, stdout, stderr := rsdump(t, "sync", srv.URL+"/resourcelist.xml", "--dest", dst, "--stall-timeout", "2s", "--min-speed", "100", "-q")
	if el := time.Since(start); el > 8*time.Second {
		t.Errorf("took %s, want at most the stall timeout, the window and slack", el.Round(time.Millisecond))
	}
	u := srv.URL + "/res/slow.txt"
	if code != exitFailed || !strings.Contains(stderr, u+": ") || !strings.Contains(stderr, "below the minimum speed of 100 B/s") {
		t.Errorf("exit %d, want %d and an error naming %s and its speed\n%s%s", code, exitFailed, u, stdout, stderr)
	}
	// The failed run released its lock: the next run may take the tree.
	d, err := deststate.Open(dst, deststate.Options{Command: "test"})
	if err != nil {
		t.Fatalf("after the failed sync: %v", err)
	}
	d.Close()
}
