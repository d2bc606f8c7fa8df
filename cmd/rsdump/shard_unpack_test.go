package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rsdump/rsdump/layout"
	"github.com/rsdump/rsdump/pack"
)

// servedPack packs src into a directory served on loopback, with the
// packages' <loc> there, and returns the dump's URL and the directory.
func servedPack(t *testing.T, src string, o pack.Options) (doc, out string) {
	out = t.TempDir()
	srv := httptest.NewServer(http.FileServer(http.Dir(out)))
	t.Cleanup(srv.Close)
	o.DumpURL = srv.URL + "/"
	if _, err := pack.Pack(context.Background(), src, out, o); err != nil {
		t.Fatal(err)
	}
	return srv.URL + "/" + layout.DumpName, out
}

// unpackSummaryJSON is what the tests read of unpack --json.
type unpackSummaryJSON struct {
	Summary struct {
		Scheduler string `json:"scheduler"`
		Shard     int    `json:"shard"`
		Shards    int    `json:"shards"`
		Written   int    `json:"written"`
		Merged    int    `json:"merged"`
		Packages  int    `json:"packages"`
		Sharded   *struct {
			Packages int      `json:"packages"`
			Restored []string `json:"restored"`
			Done     int      `json:"done"`
		} `json:"sharded"`
	} `json:"summary"`
}

// Three processes of a Kubernetes Indexed Job (JOB_COMPLETION_INDEX,
// RSDUMP_SHARDS) restore a remote Resource Dump into one directory, each
// package once; --merge makes it an ordinary Destination, exact; the
// Source's Change Dump is then applied by sync, which takes no new
// baseline.
func TestUnpackShardAutoThenSync(t *testing.T) {
	bin := buildRsdump(t)
	src := shardTree(t, 60, 3000)
	at := time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC)
	o := pack.Options{BaseURL: "http://127.0.0.1/rs/", At: at, MaxEntries: 5}
	doc, out := servedPack(t, src, o)
	dest := t.TempDir()
	var cmds []*exec.Cmd
	var outs []*bytes.Buffer
	for k := range 3 {
		cmd := exec.Command(bin, "unpack", doc, "--dest", dest, "--base-url", "http://127.0.0.1/rs/", "--shard", "auto", "--json", "-j", "2")
		cmd.Env = append(os.Environ(), fmt.Sprintf("JOB_COMPLETION_INDEX=%d", k), "RSDUMP_SHARDS=3")
		var b bytes.Buffer
		cmd.Stdout, cmd.Stderr = &b, &b
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds, outs = append(cmds, cmd), append(outs, &b)
	}
	restored := 0
	for k, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("worker %d: %v\n%s", k, err, outs[k])
		}
		var s unpackSummaryJSON
		if err := json.Unmarshal(outs[k].Bytes(), &s); err != nil || s.Summary.Scheduler != "kubernetes" || s.Summary.Shard != k+1 || s.Summary.Shards != 3 || s.Summary.Sharded == nil {
			t.Fatalf("worker %d's --json: %v\n%s", k, err, outs[k])
		}
		restored += len(s.Summary.Sharded.Restored)
	}
	if restored != 12 {
		t.Fatalf("%d packages restored, want 12", restored)
	}
	code, stdout, stderr := rsdump(t, "unpack", doc, "--dest", dest, "--base-url", "http://127.0.0.1/rs/", "--merge")
	if code != exitOK || !strings.Contains(stdout, "merged: the written logs' 60 records moved into the tree's") {
		t.Fatalf("merge: exit %d\n%s%s", code, stdout, stderr)
	}
	sameFiles(t, "restored", dirFiles(t, src), dirFiles(t, dest))

	// The Source changes and publishes a Change Dump.
	os.Remove(filepath.Join(src, "d1", "e1", "f0001"))
	os.WriteFile(filepath.Join(src, "d2", "new.txt"), []byte("created after the dump"), 0o644)
	o.Changes, o.At, o.DumpURL = true, at.Add(time.Hour), strings.TrimSuffix(doc, layout.DumpName)
	if _, err := pack.Pack(context.Background(), src, out, o); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr = rsdump(t, "sync", doc, "--dest", dest, "--json")
	var s struct {
		Summary struct {
			Steps []struct {
				Kind string `json:"kind"`
			} `json:"steps"`
			Deleted int `json:"deleted"`
		} `json:"summary"`
	}
	if err := json.Unmarshal([]byte(stdout), &s); code != exitOK || err != nil || len(s.Summary.Steps) != 1 || s.Summary.Steps[0].Kind != "incremental" || s.Summary.Deleted != 1 {
		t.Fatalf("sync after the sharded restore: exit %d, %v\n%s%s", code, err, stdout, stderr)
	}
	sameFiles(t, "synced", dirFiles(t, src), dirFiles(t, dest))
}

// A sharded restore's flags: one DUMP, not with --dry-run, --only or
// --rollback; --merge without --shard; a merge before any worker ran.
func TestUnpackShardUsage(t *testing.T) {
	t.Parallel()
	dest := t.TempDir()
	base := []string{"unpack", "--dest", dest, "--base-url", "http://127.0.0.1/rs/"}
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"a.xml", "b.xml", "--shard", "1/2"}, exitUsage, "take one DUMP"},
		{[]string{"a.xml", "--shard", "1/2", "--dry-run"}, exitUsage, "not a --dry-run"},
		{[]string{"a.xml", "--shard", "1/2", "--merge"}, exitUsage, "without --shard"},
		{[]string{"a.xml", "--lease", "1m"}, exitUsage, "--lease goes with --shard"},
	} {
		code, _, stderr := rsdump(t, append(base, c.args...)...)
		if code != c.code || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, %s; want %d and %q", c.args, code, stderr, c.code, c.want)
		}
	}
	doc, _ := servedPack(t, shardTree(t, 3, 100), pack.Options{BaseURL: "http://127.0.0.1/rs/"})
	code, _, stderr := rsdump(t, append(base, doc, "--merge")...)
	if code == exitOK || !strings.Contains(stderr, "no sharded restore in") {
		t.Errorf("a merge before any worker: exit %d, %s", code, stderr)
	}
}
