package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Three shard processes write to one bucket at once; --merge writes the
// dump; verify finds it clean, unpack restores the source, and the
// Resource List and state are byte for byte those of an unsharded pack
// of the same tree: the same bitstreams with the same hashes.
func TestShardsToS3ThenMerge(t *testing.T) {
	srv := publishedToS3Server(t)
	bin := buildRsdump(t)
	src := t.TempDir()
	for i := range 30 {
		dir := filepath.Join(src, "d"+string(rune('a'+i%4)))
		os.MkdirAll(dir, 0o755)
		os.WriteFile(filepath.Join(dir, "f"+string(rune('a'+i))), randomFile(uint64(100+i), 20000+i*997), 0o644)
	}
	flags := []string{"--base-url", "http://127.0.0.1/rs/", "--at", "2024-01-01T00:00:00Z", "--max-package-size", "150000",
		"--metalink", "--mirror", "http://127.0.0.1:9/m/", "-q", "--s3-endpoint", srv.Endpoint}
	var cmds []*exec.Cmd
	var outs []*bytes.Buffer
	for k := 1; k <= 3; k++ {
		args := append([]string{"pack", src, "-o", "s3://pub/sharded", "--shard", string(rune('0'+k)) + "/3"}, flags...)
		cmd := exec.Command(bin, args...)
		var b bytes.Buffer
		cmd.Stdout, cmd.Stderr = &b, &b
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds, outs = append(cmds, cmd), append(outs, &b)
	}
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("shard %d/3: %v\n%s", i+1, err, outs[i])
		}
	}
	objs := s3Objects(t, srv, "pub", "sharded/")
	if _, ok := objs["resourcedump.xml"]; ok {
		t.Fatal("a shard wrote the dump document")
	}
	for k := 1; k <= 3; k++ {
		if _, ok := objs["resourcedump-shard"+string(rune('0'+k))+"of3-00001.zip"]; !ok {
			t.Fatalf("shard %d wrote no package", k)
		}
	}
	// Each shard's record is its journal, ended by its completion line.
	journals := func(objs map[string][]byte) (shards map[string]bool, records []string) {
		shards = map[string]bool{}
		for name := range objs {
			if j, _, ok := strings.Cut(name, ".seg/"); ok && strings.HasPrefix(j, ".rsdump-pack.journal-shard") {
				shards[j] = true
			}
			if strings.HasPrefix(name, ".rsdump-shard") {
				records = append(records, name)
			}
		}
		return shards, records
	}
	if js, recs := journals(objs); len(js) != 3 || len(recs) != 0 {
		t.Fatalf("shards' journals %v, records %v; want 3 journals and no record", js, recs)
	}
	if code, _, stderr := rsdump(t, append([]string{"pack", "--merge", "-o", "s3://pub/sharded"}, flags...)...); code != exitOK {
		t.Fatalf("merge: exit %d\n%s", code, stderr)
	}
	if js, _ := journals(s3Objects(t, srv, "pub", "sharded/")); len(js) != 0 {
		t.Errorf("journals left after the merge: %v", js)
	}
	code, stdout, stderr := rsdump(t, "verify", "-q", "--s3-endpoint", srv.Endpoint, "s3://pub/sharded/resourcedump.xml")
	if code != exitOK || !strings.Contains(stdout, "30 verified, 0 unverified, 0 errors, 0 warnings") {
		t.Errorf("verify: exit %d\n%s%s", code, stdout, stderr)
	}
	dest := t.TempDir()
	if code, _, stderr := rsdump(t, "unpack", "-q", "--s3-endpoint", srv.Endpoint, "s3://pub/sharded/resourcedump.xml", "--dest", dest, "--base-url", "http://127.0.0.1/rs/"); code != exitOK {
		t.Fatalf("unpack: exit %d\n%s", code, stderr)
	}
	sameFiles(t, "unpacked", dirFiles(t, src), dirFiles(t, dest))

	whole := t.TempDir()
	if code, _, stderr := rsdump(t, append([]string{"pack", src, "-o", whole}, flags...)...); code != exitOK {
		t.Fatalf("unsharded pack: exit %d\n%s", code, stderr)
	}
	merged := s3Objects(t, srv, "pub", "sharded/")
	for _, name := range []string{"resourcelist.xml", ".rsdump-pack.state"} {
		want, _ := os.ReadFile(filepath.Join(whole, name))
		if len(want) == 0 || !bytes.Equal(merged[name], want) {
			t.Errorf("%s of the merge differs from the unsharded pack's", name)
		}
	}
}

// Merge refuses a set of shards with one missing, or packed with other
// options, naming the shard.
func TestMergeRefusesIncompleteShards(t *testing.T) {
	t.Parallel()
	src := t.TempDir()
	for i := range 10 {
		os.WriteFile(filepath.Join(src, "f"+string(rune('a'+i))), []byte(strings.Repeat("x", i+1)), 0o644)
	}
	out := t.TempDir()
	flags := []string{"--base-url", "http://127.0.0.1/rs/", "-o", out, "-q"}
	for _, k := range []string{"1/3", "3/3"} {
		if code, _, stderr := rsdump(t, append([]string{"pack", src, "--shard", k}, flags...)...); code != exitOK {
			t.Fatalf("shard %s: exit %d\n%s", k, code, stderr)
		}
	}
	code, _, stderr := rsdump(t, append([]string{"pack", "--merge"}, flags...)...)
	if code != exitFailed || !strings.Contains(stderr, "shard 2 of 3 has not completed") {
		t.Errorf("merge with shard 2 missing: exit %d\n%s", code, stderr)
	}
	if code, _, stderr := rsdump(t, append([]string{"pack", src, "--shard", "2/3"}, flags...)...); code != exitOK {
		t.Fatalf("shard 2/3: exit %d\n%s", code, stderr)
	}
	code, _, stderr = rsdump(t, append([]string{"pack", "--merge", "--hash", "md5,sha-256"}, flags...)...)
	if code != exitFailed || !strings.Contains(stderr, "shard 1 of 3: packed with other options") {
		t.Errorf("merge with other options: exit %d\n%s", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(out, "resourcedump.xml")); err == nil {
		t.Error("a refused merge wrote the dump document")
	}
	if code, _, stderr := rsdump(t, append([]string{"pack", "--merge"}, flags...)...); code != exitOK {
		t.Fatalf("merge: exit %d\n%s", code, stderr)
	}
	for _, bad := range [][]string{{"pack", src, "--merge"}, {"pack", src, "--shard", "4/3"}, {"pack", src, "--shard", "x"}} {
		if code, _, _ := rsdump(t, append(bad, flags...)...); code != exitUsage {
			t.Errorf("%v: exit %d, want 2", bad, code)
		}
	}
}
