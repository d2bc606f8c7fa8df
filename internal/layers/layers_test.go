package layers

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/rsdump/rsdump/"

// TestLayers: no package imports one of a higher layer, none imports a
// test helper, and every package of the module has its place.
func TestLayers(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", module+"...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	layer := map[string]int{}
	for i, l := range Layers {
		for _, p := range l {
			layer[p] = i
		}
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg := strings.TrimPrefix(fields[0], module)
		if strings.HasPrefix(pkg, "benchmarks") || slices.Contains(Helpers, pkg) {
			continue
		}
		l, ok := layer[pkg]
		if !ok {
			t.Errorf("%s has no layer: give it one in layers.go", pkg)
			continue
		}
		for _, imp := range fields[1:] {
			dep, ours := strings.CutPrefix(imp, module)
			switch {
			case !ours:
			case slices.Contains(Helpers, dep):
				t.Errorf("%s imports the test helper %s", pkg, dep)
			case layer[dep] > l:
				t.Errorf("%s (layer %d) imports %s (layer %d), a higher layer", pkg, l, dep, layer[dep])
			}
		}
	}
}

// TestApart: packages of one layer that must not reach each other at all,
// directly or not: verify checks and holds no download code (a caller
// brings a pkgread.Opener), and unpack restores without verify's checks.
func TestApart(t *testing.T) {
	t.Parallel()
	for pkg, never := range map[string][]string{
		"verify": {"transfer", "transfer/pkgfetch", "unpack"},
		"unpack": {"verify"},
		"serve":  {"pack"},
		"notify": {"pack"},
	} {
		out, err := exec.Command("go", "list", "-deps", module+pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps %s: %v\n%s", pkg, err, out)
		}
		deps := strings.Fields(string(out))
		for _, n := range never {
			if slices.Contains(deps, module+n) {
				t.Errorf("%s depends on %s", pkg, n)
			}
		}
	}
}
