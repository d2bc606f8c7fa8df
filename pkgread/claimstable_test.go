package pkgread

import (
	"fmt"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/rsdump/rsdump/internal/digest"
)

// resolved is what Resolve reported, by package and entry.
type resolved map[[2]int]Clash

func resolveAll(t *testing.T, c *Claims) resolved {
	t.Helper()
	out := resolved{}
	if err := c.Resolve(func(cl Claimed, clash Clash) { out[[2]int{cl.Pkg, cl.N}] = clash }); err != nil {
		t.Fatal(err)
	}
	return out
}

func sha(s string) digest.Set {
	set, err := digest.Parse("sha-256:" + s)
	if err != nil {
		panic(err)
	}
	return set
}

func newTable(t *testing.T, pkgs int) *Claims {
	c := NewClaims(t.TempDir())
	t.Cleanup(c.Close)
	for i := range pkgs {
		c.AddPackage(fmt.Sprintf("p%d.zip", i))
	}
	return c
}

var (
	one = sha("1111111111111111111111111111111111111111111111111111111111111111")
	two = sha("2222222222222222222222222222222222222222222222222222222222222222")
)

// A target two packages carry with other content clashes in both, each
// naming the other; the first claim is marked First.
func TestClaimsContentClashAcrossPackages(t *testing.T) {
	t.Parallel()
	c := newTable(t, 2)
	c.Claim(Target{Pkg: 1, N: 7, Name: "a.txt", Length: 3, Want: two})
	c.Claim(Target{Pkg: 0, N: 2, Name: "a.txt", Length: 3, Want: one})
	c.Claim(Target{Pkg: 0, N: 3, Name: "b.txt", Length: 3, Want: one})
	got := resolveAll(t, c)
	want := resolved{
		{0, 2}: {Kind: ClashContent, Package: "p1.zip", Entry: 7, First: true},
		{1, 7}: {Kind: ClashContent, Package: "p0.zip", Entry: 2},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

// The same target with the same content in two packages is no clash.
func TestClaimsSameContentIsNoClash(t *testing.T) {
	t.Parallel()
	c := newTable(t, 3)
	for pkg := range 3 {
		c.Claim(Target{Pkg: pkg, N: 1, Name: "a.txt", Length: 3, Want: one})
	}
	if got := resolveAll(t, c); len(got) != 0 {
		t.Errorf("clashes: %v", got)
	}
}

// Names that differ only by case or NFC against NFD are reported once
// each, naming the first claimed, in one package or across two.
func TestClaimsFoldClash(t *testing.T) {
	t.Parallel()
	c := newTable(t, 2)
	c.Claim(Target{Pkg: 0, N: 1, Name: "caf\u00e9.txt", Length: 1, Want: one})
	c.Claim(Target{Pkg: 1, N: 1, Name: "cafe\u0301.txt", Length: 1, Want: one})
	c.Claim(Target{Pkg: 1, N: 2, Name: "Readme", Length: 1, Want: one})
	c.Claim(Target{Pkg: 1, N: 3, Name: "README", Length: 1, Want: two})
	c.Claim(Target{Pkg: 0, N: 4, Name: "README", Length: 1, Want: two}) // same name, same content
	got := resolveAll(t, c)
	want := resolved{
		{1, 1}: {Kind: ClashFold, Package: "p0.zip", Entry: 1},
		{1, 2}: {Kind: ClashFold, Package: "p0.zip", Entry: 4},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

// A table larger than a run spills to sorted runs (more than MaxFanIn of
// them, so they are merged on the way) and finds the same clashes, with
// the names Resolve hands back read from the runs; no run file is left.
func TestClaimsSpill(t *testing.T) {
	defer func(n int) { claimRun = n }(claimRun)
	claimRun = 100
	dir := t.TempDir()
	c := NewClaims(dir)
	for i := range 4 {
		c.AddPackage(fmt.Sprintf("p%d.zip", i))
	}
	const n = 5000
	for pkg := range 4 {
		for i := range n {
			want := one
			if i%1000 == 0 && pkg == 3 {
				want = two // 5 targets the last package carries with other content
			}
			name := fmt.Sprintf("d/%d.txt", i)
			c.Claim(Target{Pkg: pkg, N: i + 1, Name: name, Length: 1, Want: want, URI: "u/" + name, Path: name})
		}
	}
	if c.sort.Runs() < 2 {
		t.Fatalf("no spill: %d runs", c.sort.Runs())
	}
	content := 0
	err := c.Resolve(func(cl Claimed, clash Clash) {
		if clash.Kind != ClashContent || (cl.N-1)%1000 != 0 || cl.Path != fmt.Sprintf("d/%d.txt", cl.N-1) || cl.URI != "u/"+cl.Path {
			t.Errorf("unexpected %+v %+v", cl, clash)
		}
		content++
	})
	if err != nil {
		t.Fatal(err)
	}
	if content != 5*4 {
		t.Errorf("%d content clashes, want 20 (5 targets, 4 packages each)", content)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "*")); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
}

// The live heap of a table does not grow with the number of targets,
// neither while packages claim them nor while Resolve walks them: four
// times the targets keep (nearly) the same heap.
func TestClaimsMemoryDoesNotGrow(t *testing.T) {
	defer func(n int) { claimRun = n }(claimRun)
	claimRun = 1000
	small, big := claimsHeap(t, 25_000), claimsHeap(t, 100_000)
	t.Logf("live heap: %d KB at 25,000 targets, %d KB at 100,000", small/1024, big/1024)
	// A map of the targets (the table before) held ~50 B each: 3.7 MB more.
	if big > small+1<<20 {
		t.Errorf("live heap grew by %d KB with 75,000 more targets", (big-small)/1024)
	}
}

// claimsHeap claims n targets (one clash among them) and returns the
// largest live heap seen after claiming and while resolving.
func claimsHeap(t *testing.T, n int) uint64 {
	c := newTable(t, 2)
	for i := range n {
		c.Claim(Target{Pkg: i % 2, N: i/2 + 1, Name: fmt.Sprintf("a%02d/b%02d/r%07d.txt", i%100, i/100%100, i), Length: 41, Want: one})
	}
	c.Claim(Target{Pkg: 1, N: n, Name: "a00/b00/r0000000.txt", Length: 41, Want: two})
	peak := liveHeap()
	clashes := 0
	err := c.Resolve(func(Claimed, Clash) {
		clashes++
		peak = max(peak, liveHeap())
	})
	if err != nil || clashes != 2 {
		t.Fatalf("%d clashes, %v", clashes, err)
	}
	return peak
}

func liveHeap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// A target claimed after Resolve (a package the survey could not read) is
// checked against the sorted index of every claim before it, found by a
// binary search over runs that spilled, and against the other late ones.
func TestClaimsLate(t *testing.T) {
	defer func(n int) { claimRun = n }(claimRun)
	claimRun = 50
	c := newTable(t, 3)
	for i := range 1000 {
		c.Claim(Target{Pkg: 0, N: i + 1, Name: fmt.Sprintf("f%04d", i), Length: 1, Want: one})
	}
	c.KeepIndex()
	if got := resolveAll(t, c); len(got) != 0 {
		t.Fatalf("clashes: %v", got)
	}
	checks := []struct {
		t    Target
		want Clash
	}{
		{Target{Pkg: 1, N: 1, Name: "f0500", Length: 1, Want: one}, Clash{}},
		{Target{Pkg: 1, N: 2, Name: "f0501", Length: 1, Want: two}, Clash{Kind: ClashContent, Package: "p0.zip", Entry: 502}},
		{Target{Pkg: 1, N: 3, Name: "F0999", Length: 1, Want: one}, Clash{Kind: ClashFold, Package: "p0.zip", Entry: 1000}},
		{Target{Pkg: 1, N: 4, Name: "new", Length: 1, Want: one}, Clash{}},
		{Target{Pkg: 2, N: 1, Name: "new", Length: 1, Want: two}, Clash{Kind: ClashContent, Package: "p1.zip", Entry: 4}},
	}
	for _, ch := range checks {
		if got := c.Late(ch.t); got != ch.want {
			t.Errorf("Late(%s of p%d) = %+v, want %+v", ch.t.Name, ch.t.Pkg, got, ch.want)
		}
	}
}
