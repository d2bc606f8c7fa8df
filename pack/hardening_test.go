package pack

import (
	"archive/zip"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rsdump/rsdump/finding"
	"github.com/rsdump/rsdump/internal/ziptest"
	"github.com/rsdump/rsdump/verify"
)

// verifyClean runs verify on a pack output and fails t on any problem.
func verifyClean(t *testing.T, out string) *verify.Summary {
	t.Helper()
	var problems []string
	sum, err := verify.Verify(context.Background(), []string{out}, verify.Options{Events: finding.OnFindings(func(f finding.Finding) {
		if f.Severity != finding.OK {
			problems = append(problems, f.String())
		}
	})})
	if err != nil || len(problems) > 0 {
		t.Errorf("verify %s: %v\n%s", out, err, strings.Join(problems, "\n"))
	}
	return sum
}

// TestStoredEntriesHaveNoDescriptor: a large incompressible file, streamed
// into the package and stored, holding what looks like a data descriptor
// and a local entry. Its local header carries CRC and size, so a
// streaming reader never looks for a descriptor inside the data.
func TestStoredEntriesHaveNoDescriptor(t *testing.T) {
	t.Parallel()
	data := pseudoRandom(smallMax + 4096)
	head := data[:1000]
	d := binary.LittleEndian.AppendUint32(nil, 0x08074b50)
	d = binary.LittleEndian.AppendUint32(d, crc32.ChecksumIEEE(head))
	d = binary.LittleEndian.AppendUint32(d, uint32(len(head)))
	d = binary.LittleEndian.AppendUint32(d, uint32(len(head)))
	evil := binary.LittleEndian.AppendUint32(nil, 0x04034b50)
	evil = append(evil, make([]byte, 22)...)
	evil = binary.LittleEndian.AppendUint16(evil, uint16(len("resources/evil.sh")))
	evil = binary.LittleEndian.AppendUint16(evil, 0)
	evil = append(evil, "resources/evil.sh"...)
	copy(data[1000:], append(d, evil...))
	src := tree(t, map[string]string{"big.bin": string(data), "small.txt": "small"})
	o := testOptions()
	res, out := mustPack(t, src, o)
	path := filepath.Join(out, res.Packages[0].Name)
	zr, err := zip.OpenReader(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range zr.File {
		if f.Method == zip.Store && f.Flags&0x8 != 0 {
			t.Errorf("%s: stored with a data descriptor (flags %#x)", f.Name, f.Flags)
		}
	}
	zr.Close()
	if m := entryMethods(t, path)["resources/big.bin"]; m != zip.Store {
		t.Errorf("big.bin method %d, want stored", m)
	}
	verifyClean(t, out)
	ziptest.CheckTools(t, path) // bsdtar from a pipe too
}

// TestFollowSymlinksSharedTarget: a link x/toy -> ../y sorts before y
// itself; both are packed. A link to an ancestor is a loop and is skipped.
func TestFollowSymlinksSharedTarget(t *testing.T) {
	t.Parallel()
	src := tree(t, map[string]string{"x/a.txt": "a", "y/f.txt": "f"})
	if err := os.Symlink("../y", filepath.Join(src, "x", "toy")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("..", filepath.Join(src, "y", "up")); err != nil {
		t.Fatal(err)
	}
	var warnings []string
	o := testOptions()
	o.FollowSymlinks = true
	o.Events = func(e finding.Event) {
		if w, ok := e.(finding.Finding); ok {
			warnings = append(warnings, w.String())
		}
	}
	res, out := mustPack(t, src, o)
	m := entryMethods(t, filepath.Join(out, res.Packages[0].Name))
	var names []string
	for n := range m {
		names = append(names, n)
	}
	slices.Sort(names)
	// y/up -> .. is a loop wherever it is met: under y, and under x/toy.
	want := []string{"manifest.xml", "resources/x/a.txt", "resources/x/toy/f.txt", "resources/y/f.txt"}
	if !slices.Equal(names, want) {
		t.Errorf("entries %q, want %q", names, want)
	}
	if len(warnings) != 2 || !strings.Contains(warnings[0], "loop") {
		t.Errorf("warnings %q, want two symlink loops", warnings)
	}
	verifyClean(t, out)
}

// TestRenamedOverDuringPack: another file of the same size and mtime is
// renamed over a walked file before it is read; pack reports it as changed.
func TestRenamedOverDuringPack(t *testing.T) {
	for _, size := range []int{100, smallMax + 1} { // in memory, and streamed
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			src := tree(t, map[string]string{"a.bin": strings.Repeat("a", size), "z.txt": "z"})
			other := filepath.Join(t.TempDir(), "other")
			os.WriteFile(other, []byte(strings.Repeat("b", size)), 0o644)
			os.Chtimes(other, fixedTime, fixedTime)
			defer setHook(func(rel string) {
				if rel == "a.bin" {
					if err := os.Rename(other, filepath.Join(src, rel)); err != nil {
						t.Error(err)
					}
				}
			})()
			out := t.TempDir()
			_, err := Pack(context.Background(), src, out, testOptions())
			if !errors.Is(err, ErrChanged) || !strings.Contains(err.Error(), "a.bin") {
				t.Fatalf("error %v, want ErrChanged naming a.bin", err)
			}
			assertNoFinalOutputs(t, out)
		})
	}
}

// TestNamesVerifyRefusesRoundTrip: names internal/safepath refuses, at
// the top and deeper, are left out by pack, and verify passes the rest.
func TestNamesVerifyRefusesRoundTrip(t *testing.T) {
	t.Parallel()
	src := tree(t, map[string]string{"ok.txt": "ok", `back\slash.txt`: "x", "C:drive.txt": "y",
		`sub/back\slash.txt`: "z", "sub/ok.txt": "ok"})
	res, out := mustPack(t, src, testOptions())
	if res.Bitstreams != 2 || res.Skipped != 3 {
		t.Errorf("bitstreams %d skipped %d, want 2 and 3", res.Bitstreams, res.Skipped)
	}
	if sum := verifyClean(t, out); sum.Bitstreams != 2 {
		t.Errorf("verify: %d bitstreams, want 2", sum.Bitstreams)
	}
}
