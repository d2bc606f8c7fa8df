package pack

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rsdump/rsdump/layout"
)

func TestShardOfIsDisjointAndCovers(t *testing.T) {
	t.Parallel()
	counts := map[int]int{}
	for i := range 3000 {
		rel := "dir/" + strings.Repeat("x", i%7) + string(rune('a'+i%26)) + "/" + string(rune('a'+i/26%26)) + ".bin"
		k := ShardOf(rel, 3)
		if k < 1 || k > 3 || ShardOf(rel, 3) != k {
			t.Fatalf("ShardOf(%q, 3) = %d", rel, k)
		}
		counts[k]++
	}
	for k := 1; k <= 3; k++ {
		if counts[k] < 700 {
			t.Errorf("shard %d got %d of 3000 paths", k, counts[k])
		}
	}
	if shardTag(2, 12) != "shard02of12" || !layout.IsOutput("resourcedump-shard02of12-00001.zip") || layout.IsOutput(shardJournalName(2, 12)) {
		t.Error("shard names")
	}
}

// A shard whose journal claims another shard's files is refused: the
// merge checks each path's shard as it meets it.
func TestMergeRefusesOverlap(t *testing.T) {
	t.Parallel()
	_, out, _ := packShards(t, 20, 2, Options{BaseURL: "http://127.0.0.1/"})
	ctx := context.Background()
	// Shard 2's journal now records shard 1's package as one more of its
	// own, copied under shard 2's next name.
	one, two := journalLines(t, out, 1, 2), journalLines(t, out, 2, 2)
	var e journalEntry
	var done journalDone
	json.Unmarshal(one[1], &e)
	json.Unmarshal(two[len(two)-1], &done)
	if e.Info.Name != "resourcedump-shard1of2-00001.zip" || done.Shards != 2 {
		t.Fatalf("journals: %s, %s", one[1], two[len(two)-1])
	}
	name := shardKind(2, 2).packageName(done.Packages + 1)
	for from, to := range map[string]string{e.Info.Name: name, e.Info.Manifest: manifestName(name)} {
		os.WriteFile(filepath.Join(out, to), readFile(t, filepath.Join(out, from)), 0o644)
	}
	e.Info.Name, e.Info.Manifest = name, manifestName(name)
	done.Packages++
	lines := append(two[:len(two)-1:len(two)-1], mustJSON(t, e), mustJSON(t, done))
	os.WriteFile(filepath.Join(out, shardJournalName(2, 2)), append(bytes.Join(lines, []byte("\n")), '\n'), 0o644)
	_, err := Merge(ctx, out, Options{BaseURL: "http://127.0.0.1/"})
	var se *ShardError
	if !errors.As(err, &se) || se.Shard != 2 || !strings.Contains(err.Error(), "belongs to shard 1") && !strings.Contains(err.Error(), "overlap") {
		t.Fatalf("merge of overlapping shards: %v", err)
	}
	if _, err := os.Stat(filepath.Join(out, layout.DumpName)); err == nil {
		t.Fatal("a refused merge wrote the dump document")
	}
}

// packShards packs a source of files, each of its own length, as shards
// 1..n of o into a new output directory, and returns the results by shard.
func packShards(t *testing.T, files, n int, o Options) (src, out string, res map[int]*Result) {
	t.Helper()
	src, out, res = t.TempDir(), t.TempDir(), map[int]*Result{}
	for i := range files {
		os.WriteFile(filepath.Join(src, fmt.Sprintf("f%02d", i)), []byte(strings.Repeat("y", 100+i)), 0o644)
	}
	for k := 1; k <= n; k++ {
		o.Shard, o.Shards = k, n
		r, err := Pack(context.Background(), src, out, o)
		if err != nil {
			t.Fatal(err)
		}
		res[k] = r
	}
	return src, out, res
}

// journalLines is shard k of n's journal in out, a line each.
func journalLines(t *testing.T, out string, k, n int) [][]byte {
	t.Helper()
	return bytes.Split(bytes.TrimSuffix(readFile(t, filepath.Join(out, shardJournalName(k, n))), []byte("\n")), []byte("\n"))
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A shard keeps its journal, ended by its completion line, as its record
// for the merge: no other file. A completion line cut short (a crash as it
// was written) makes the merge refuse, naming the journal, and the shard
// run again resumes, reusing its packages; the merge, once done, removes
// the journals, and a second merge finds no shard.
func TestShardJournalIsItsRecord(t *testing.T) {
	t.Parallel()
	o := Options{BaseURL: "http://127.0.0.1/", MaxEntries: 3}
	src, out, packs := packShards(t, 16, 2, o)
	ctx := context.Background()
	for k := 1; k <= 2; k++ {
		if want := filepath.Join(out, shardJournalName(k, 2)); packs[k].Document != want {
			t.Errorf("shard %d: Result.Document %s, want %s", k, packs[k].Document, want)
		}
	}
	if recs, _ := filepath.Glob(filepath.Join(out, ".rsdump-shard*")); len(recs) != 0 {
		t.Errorf("shard records beside the journals: %v", recs)
	}
	var dones [3]journalDone
	for k := 1; k <= 2; k++ {
		done := &dones[k]
		lines := journalLines(t, out, k, 2)
		if err := json.Unmarshal(lines[len(lines)-1], done); err != nil || done.Shard != k || done.Shards != 2 ||
			done.Packages != len(packs[k].Packages) || done.Packages < 2 || done.Options != dones[1].Options || done.Options == "" || done.Completed.IsZero() {
			t.Errorf("shard %d of 2: the journal ends with %s, want its completion line (%d packages)", k, lines[len(lines)-1], len(packs[k].Packages))
		}
	}

	// Shard 1's completion line cut short.
	path := filepath.Join(out, shardJournalName(1, 2))
	b := readFile(t, path)
	os.WriteFile(path, b[:len(b)-20], 0o644)
	_, err := Merge(ctx, out, o)
	var se *ShardError
	if !errors.As(err, &se) || se.Shard != 1 || !strings.Contains(err.Error(), "has not completed") || !strings.Contains(err.Error(), path) {
		t.Fatalf("merge with shard 1's completion line cut: %v", err)
	}
	if _, err := os.Stat(filepath.Join(out, layout.DumpName)); err == nil {
		t.Fatal("a refused merge wrote the dump document")
	}
	o.Shard, o.Shards = 1, 2
	res, err := Pack(ctx, src, out, o)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range res.Packages {
		if !p.Reused {
			t.Errorf("shard 1 run again after its completion line was cut: %s not reused", p.Name)
		}
	}
	if len(res.Packages) != len(packs[1].Packages) {
		t.Errorf("shard 1 run again: %d packages, want %d", len(res.Packages), len(packs[1].Packages))
	}
	merged, err := Merge(ctx, out, o)
	if err != nil {
		t.Fatal(err)
	}
	if merged.Bitstreams != 16 || len(merged.Packages) != len(packs[1].Packages)+len(packs[2].Packages) {
		t.Errorf("merged %d bitstreams in %d packages", merged.Bitstreams, len(merged.Packages))
	}
	if js, _ := filepath.Glob(filepath.Join(out, journalName+"*")); len(js) != 0 {
		t.Errorf("journals left after the merge: %v", js)
	}
	if _, err := Merge(ctx, out, o); !errors.As(err, &se) || !strings.Contains(err.Error(), "no shard has completed") {
		t.Errorf("a second merge: %v", err)
	}
}

// A shard packed again after it completed is a new run: its completed
// journal is not resumed but replaced, and ends with one completion line.
// Packed again with other options, the merge with the first options
// refuses it, naming the shard and its journal.
func TestShardPackedAgain(t *testing.T) {
	t.Parallel()
	o := Options{BaseURL: "http://127.0.0.1/", MaxEntries: 2}
	src, out, _ := packShards(t, 10, 2, o)
	ctx := context.Background()
	o.Shard, o.Shards = 2, 2
	res, err := Pack(ctx, src, out, o)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range res.Packages {
		if p.Reused {
			t.Errorf("shard 2 packed again after it completed: %s reused from the completed run", p.Name)
		}
	}
	n := 0
	for _, l := range journalLines(t, out, 2, 2) {
		if bytes.Contains(l, []byte(`"completed":`)) && bytes.Contains(l, []byte(`"shards":`)) {
			n++
		}
	}
	if n != 1 {
		t.Errorf("shard 2's journal has %d completion lines, want 1", n)
	}
	other := o
	other.Hashes = []string{"md5", "sha-256"}
	if _, err := Pack(ctx, src, out, other); err != nil {
		t.Fatal(err)
	}
	_, err = Merge(ctx, out, o)
	var se *ShardError
	if !errors.As(err, &se) || se.Shard != 2 || !strings.Contains(err.Error(), "packed with other options") || !strings.Contains(err.Error(), shardJournalName(2, 2)) {
		t.Fatalf("merge of a shard packed with other options: %v", err)
	}
	o.Shard = 2
	if _, err := Pack(ctx, src, out, o); err != nil {
		t.Fatal(err)
	}
	if res, err := Merge(ctx, out, o); err != nil || res.Bitstreams != 10 {
		t.Fatalf("merge: %v", err)
	}
}

// Packing again with another number of shards drops the records of the
// earlier set: the merge sees only the new one.
func TestReshard(t *testing.T) {
	t.Parallel()
	src := t.TempDir()
	for i := range 12 {
		os.WriteFile(filepath.Join(src, "g"+string(rune('a'+i))), []byte(strings.Repeat("z", 50+i)), 0o644)
	}
	out := t.TempDir()
	ctx := context.Background()
	o := Options{BaseURL: "http://127.0.0.1/", Prune: true}
	for _, n := range []int{2, 3} {
		for k := 1; k <= n; k++ {
			o.Shard, o.Shards = k, n
			if _, err := Pack(ctx, src, out, o); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, k := range []int{1, 2} {
		if _, err := os.Stat(filepath.Join(out, shardJournalName(k, 2))); err == nil {
			t.Errorf("shard %d of 2's journal left beside the shards of 3", k)
		}
	}
	res, err := Merge(ctx, out, o)
	if err != nil {
		t.Fatal(err)
	}
	if res.Bitstreams != 12 {
		t.Fatalf("merged %d bitstreams, want 12", res.Bitstreams)
	}
	for _, p := range res.Packages {
		if !strings.Contains(p.Name, "of3-") {
			t.Errorf("package %s of the earlier set of shards merged", p.Name)
		}
	}
	if _, err := os.Stat(filepath.Join(out, "resourcedump-shard1of2-00001.zip")); err == nil {
		t.Error("the earlier set's packages were not pruned by the merge (--prune)")
	}
}
