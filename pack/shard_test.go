package pack

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestShardOfIsDisjointAndCovers(t *testing.T) {
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
	if shardTag(2, 12) != "shard02of12" || !IsOutput("resourcedump-shard02of12-00001.zip") || IsOutput(shardRecordName(2, 12)) {
		t.Error("shard names")
	}
}

// A shard record that claims another shard's files is refused: the merge
// checks each path's shard as it meets it.
func TestMergeRefusesOverlap(t *testing.T) {
	src := t.TempDir()
	for i := range 20 {
		os.WriteFile(filepath.Join(src, "f"+string(rune('a'+i))), []byte(strings.Repeat("y", 100+i)), 0o644)
	}
	out := t.TempDir()
	ctx := context.Background()
	for k := 1; k <= 2; k++ {
		if _, err := Pack(ctx, src, out, Options{BaseURL: "http://127.0.0.1/", Shard: k, Shards: 2}); err != nil {
			t.Fatal(err)
		}
	}
	// Shard 2's record now lists shard 1's packages as well.
	read := func(k int) shardRecord {
		var rec shardRecord
		b, _ := os.ReadFile(filepath.Join(out, shardRecordName(k, 2)))
		json.Unmarshal(b, &rec)
		return rec
	}
	one, two := read(1), read(2)
	two.Packages = append(two.Packages, one.Packages...)
	b, _ := json.Marshal(two)
	os.WriteFile(filepath.Join(out, shardRecordName(2, 2)), b, 0o644)
	_, err := Merge(ctx, out, Options{BaseURL: "http://127.0.0.1/"})
	var se *ShardError
	if !errors.As(err, &se) || se.Shard != 2 || !strings.Contains(err.Error(), "belongs to shard 1") && !strings.Contains(err.Error(), "overlap") {
		t.Fatalf("merge of overlapping shards: %v", err)
	}
	if _, err := os.Stat(filepath.Join(out, DumpName)); err == nil {
		t.Fatal("a refused merge wrote the dump document")
	}
}

// Packing again with another number of shards drops the records of the
// earlier set: the merge sees only the new one.
func TestReshard(t *testing.T) {
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
