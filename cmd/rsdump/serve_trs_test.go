package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
)

// TestServeTRS: rsdump serve --trs serves the Tracked Resource Set of DIR
// at trs under the documents' path, says its URL at startup, answers it
// as Turtle with its Base and Change Log; rsdump sync of that URL copies
// the tree; --trs-keep is checked.
func TestServeTRS(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	base := "http://" + addr + "/res/"
	src, dir := t.TempDir(), t.TempDir()
	for _, n := range []string{"a.txt", "b.txt"} {
		os.WriteFile(filepath.Join(src, n), []byte(n), 0o644)
	}
	if code, out, errs := rsdump(t, "pack", src, "--base-url", base, "-o", dir, "-q"); code != exitOK {
		t.Fatalf("pack: %d %s %s", code, out, errs)
	}
	os.WriteFile(filepath.Join(src, "c.txt"), []byte("c"), 0o644)
	if code, out, errs := rsdump(t, "pack", "--changes", src, "--base-url", base, "-o", dir, "-q"); code != exitOK {
		t.Fatalf("pack --changes: %d %s %s", code, out, errs)
	}
	s := startServe(t, io.Discard, dir, "--addr", addr, "--base-url", base, "--resources", src, "--trs", "--trs-keep", "5", "--quiet")
	defer s.stop(t)
	trsURL := base + "trs"
	if want := "Tracked Resource Set at " + trsURL; !strings.Contains(s.lines.Text(), want) {
		t.Errorf("startup line %q lacks %q", s.lines.Text(), want)
	}
	resp, err := http.Get(trsURL)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{"a trs:TrackedResourceSet", "trs:base <" + trsURL + "/base>", "a trs:Creation", "trs:changed <" + base + "c.txt>"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("GET trs: %s lacks %q:\n%s", resp.Status, want, b)
		}
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/turtle") {
		t.Errorf("Content-Type %q", ct)
	}

	dst := t.TempDir()
	if code, out, errs := rsdump(t, "sync", trsURL, "--dest", dst, "--quiet"); code != exitOK {
		t.Errorf("sync %s: exit %d\n%s%s", trsURL, code, out, errs)
	}
	for _, n := range []string{"a.txt", "b.txt", "c.txt"} {
		if b, err := os.ReadFile(filepath.Join(dst, n)); err != nil || string(b) != strings.TrimSuffix(n, ".txt") && string(b) != n {
			t.Errorf("%s: %q %v", n, b, err)
		}
	}

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"serve", dir, "--trs-keep", "3"}, "--trs-keep needs --trs"},
		{[]string{"serve", dir, "--trs", "--trs-keep", "-1"}, "must not be negative"},
	} {
		code, out, errs := rsdump(t, c.args...)
		if code != exitUsage || !strings.Contains(out+errs, c.want) {
			t.Errorf("rsdump %q: exit %d; %q lacks %q", c.args, code, out+errs, c.want)
		}
	}
}

// TestSyncTRSEndlessChangeLog: sync of a Tracked Resource Set whose
// Change Log's trs:previous links never end (each segment names a new
// one, none the Base's cutoff event) stops after --trs-max-segments with
// an error naming the set and the bound, having fetched no more.
func TestSyncTRSEndlessChangeLog(t *testing.T) {
	t.Parallel()
	var srv *httptest.Server
	var segments atomic.Int64
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/turtle")
		u := srv.URL
		switch {
		case r.URL.Path == "/trs":
			fmt.Fprintf(w, "@prefix trs: <http://open-services.net/ns/core/trs#> .\n<%s/trs> a trs:TrackedResourceSet ; trs:base <%s/base> ; trs:changeLog [ a trs:ChangeLog ; trs:previous <%s/seg/1> ] .\n", u, u, u)
		case r.URL.Path == "/base":
			fmt.Fprintf(w, "@prefix trs: <http://open-services.net/ns/core/trs#> .\n@prefix ldp: <http://www.w3.org/ns/ldp#> .\n<%s/base> a ldp:DirectContainer ; trs:cutoffEvent <urn:cutoff> .\n", u)
		case strings.HasPrefix(r.URL.Path, "/seg/"):
			n, _ := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/seg/"))
			segments.Add(1)
			fmt.Fprintf(w, "@prefix trs: <http://open-services.net/ns/core/trs#> .\n<%s/seg/%d> a trs:ChangeLog ; trs:previous <%s/seg/%d> .\n", u, n, u, n+1)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	code, out, errs := rsdump(t, "sync", srv.URL+"/trs", "--dest", t.TempDir(), "--base-url", srv.URL+"/data/", "--trs-max-segments", "25", "--quiet")
	if code == exitOK || !strings.Contains(errs, "past 25 segments") || !strings.Contains(errs, srv.URL+"/trs") {
		t.Errorf("exit %d, want an error naming the set and the bound:\n%s%s", code, out, errs)
	}
	if n := segments.Load(); n > 25 {
		t.Errorf("%d segments fetched, want at most 25", n)
	}
	if code, _, errs := rsdump(t, "sync", srv.URL+"/trs", "--dest", t.TempDir(), "--trs-max-time", "0s"); code != exitUsage {
		t.Errorf("--trs-max-time 0s: exit %d %s, want a usage error", code, errs)
	}
}
