package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	mt "github.com/rsdump/rsdump/internal/mirrortest"
	"github.com/rsdump/rsdump/metalink"
)

// getFixture serves n random bytes from two rate-limited mirrors and
// writes a .meta4 for them with 64 KiB sha-256 pieces.
func getFixture(t *testing.T, n int, rate int64) (data []byte, meta string, mirrors []*mt.Mirror) {
	t.Helper()
	data = make([]byte, n)
	rand.NewChaCha8([32]byte{7}).Read(data)
	ph, _ := metalink.NewPieceHasher("sha-256", 64<<10)
	ph.Write(data)
	sum := sha256.Sum256(data)
	size := int64(n)
	f := metalink.File{Name: "pkg.zip", Size: &size, Hashes: []metalink.Hash{{Type: "sha-256", Value: hex.EncodeToString(sum[:])}},
		Pieces: []metalink.Pieces{ph.Pieces()}}
	for i := range 2 {
		s, m := mt.Server(bytes.NewReader(data), size, "pkg.zip", mt.RateLimit(rate))
		t.Cleanup(s.Close)
		f.URLs = append(f.URLs, metalink.URL{URL: s.URL + "/pkg.zip", Priority: i + 1})
		mirrors = append(mirrors, m)
	}
	var b bytes.Buffer
	if err := metalink.Encode(&b, &metalink.Metalink{Files: []metalink.File{f}}); err != nil {
		t.Fatal(err)
	}
	meta = filepath.Join(t.TempDir(), "pkg.meta4")
	os.WriteFile(meta, b.Bytes(), 0o644)
	return data, meta, mirrors
}

func TestGetUsage(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"get", "--help"}, exitOK, "Exit status"},
		{[]string{"get"}, exitUsage, "at least one SOURCE"},
		{[]string{"get", "x.meta4", "--connections", "0"}, exitUsage, "at least 1"},
		{[]string{"get", "/nonexistent.meta4"}, exitFailed, "nonexistent"},
		{[]string{"get", "x.meta4", "--unpack", "d"}, exitUsage, "--base-url"},
	} {
		code, out, errs := rsdump(t, c.args...)
		if code != c.code || !strings.Contains(out+errs, c.want) {
			t.Errorf("rsdump %q: exit %d, want %d; output %q lacks %q", c.args, code, c.code, out+errs, c.want)
		}
	}
}

func TestGetJSON(t *testing.T) {
	t.Parallel()
	data, meta, _ := getFixture(t, 1<<20, 32<<20)
	out := t.TempDir()
	code, stdout, stderr := rsdump(t, "get", meta, "-o", out, "--json")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	s := oneGetFile(t, stdout)
	got, _ := os.ReadFile(filepath.Join(out, "pkg.zip"))
	if !bytes.Equal(got, data) || s.Bytes != int64(len(data)) || len(s.Mirrors) != 2 || s.Path == "" {
		t.Errorf("summary %+v", s)
	}
	code, stdout, _ = rsdump(t, "get", meta, "-o", out, "--json")
	if s = oneGetFile(t, stdout); code != exitOK || !s.Skipped {
		t.Errorf("second run: exit %d, %+v", code, s)
	}
}

// oneGetFile checks that stdout is exactly one JSON document, a report
// on one file, and returns that file's summary.
func oneGetFile(t *testing.T, stdout string) getSummary {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(stdout))
	var rep getReport
	if err := dec.Decode(&rep); err != nil {
		t.Fatalf("--json output does not parse: %v: %q", err, stdout)
	}
	if _, err := dec.Token(); err != io.EOF {
		t.Fatalf("--json output holds more than one JSON value: %q", stdout)
	}
	if len(rep.Files) != 1 {
		t.Fatalf("report on %d files, want 1: %q", len(rep.Files), stdout)
	}
	return rep.Files[0]
}

// TestGetNoRangeNotDropped: a run that succeeds beside a mirror without
// Range support reports that mirror as such, never as dropped, in the
// summary line, on stderr and in --json.
func TestGetNoRangeNotDropped(t *testing.T) {
	data, meta, _ := getFixture(t, 1<<20, 32<<20)
	s, _ := mt.Server(bytes.NewReader(data), int64(len(data)), "pkg.zip", mt.NoRange())
	t.Cleanup(s.Close)
	b, _ := os.ReadFile(meta)
	m, _, err := metalink.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	m.Files[0].URLs = append([]metalink.URL{{URL: s.URL + "/pkg.zip", Priority: 1}}, m.Files[0].URLs...)
	var buf bytes.Buffer
	metalink.Encode(&buf, m)
	os.WriteFile(meta, buf.Bytes(), 0o644)
	code, stdout, stderr := rsdump(t, "get", meta, "-o", t.TempDir())
	if code != exitOK || strings.Contains(stdout+stderr, "dropped") || !strings.Contains(stdout, "1 mirror without Range support") ||
		strings.Count(stderr, "ignores Range requests ("+s.URL+"/pkg.zip)") != 1 {
		t.Errorf("exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	code, stdout, _ = rsdump(t, "get", meta, "-o", t.TempDir(), "--json")
	if f := oneGetFile(t, stdout); code != exitOK || len(f.Dropped) != 0 || len(f.NoRange) != 1 {
		t.Errorf("exit %d, %+v", code, f)
	}
	// Three mirrors without Range (python3 -m http.server, say): the file
	// streams from one of them, and the run ends without "dropped".
	m.Files[0].URLs = nil
	for i := range 3 {
		s, _ := mt.Server(bytes.NewReader(data), int64(len(data)), "pkg.zip", mt.NoRange())
		t.Cleanup(s.Close)
		m.Files[0].URLs = append(m.Files[0].URLs, metalink.URL{URL: s.URL + "/pkg.zip", Priority: i + 1})
	}
	buf.Reset()
	metalink.Encode(&buf, m)
	os.WriteFile(meta, buf.Bytes(), 0o644)
	code, stdout, stderr = rsdump(t, "get", meta, "-o", t.TempDir())
	if code != exitOK || strings.Contains(stdout+stderr, "dropped") || strings.Contains(stdout, "refetched") ||
		!strings.HasSuffix(stdout, "; 3 mirrors without Range support\n") {
		t.Errorf("three mirrors without Range: exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
}

// TestGetKilledResumes kills a real rsdump get with SIGKILL at random
// moments (several seeds); the same command then finishes the file,
// fetching again little more than the pieces that were in flight.
func TestGetKilledResumes(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping subprocess kill test in -short mode")
	}
	bin := buildRsdump(t)
	t.Run("sigint", func(t *testing.T) { testGetInterrupted(t, bin) })
	for seed := uint64(1); seed <= 3; seed++ {
		data, meta, mirrors := getFixture(t, 8<<20, 4<<20) // about a second at 8 MiB/s
		out := t.TempDir()
		args := []string{"get", meta, "-o", out, "--per-mirror", "2", "--json", "-q"}
		cmd := exec.Command(bin, args...)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		r := rand.New(rand.NewPCG(seed, 0))
		time.Sleep(time.Duration(150+r.IntN(600)) * time.Millisecond)
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		res, err := exec.Command(bin, args...).Output()
		if err != nil {
			t.Fatalf("seed %d: resumed run: %v", seed, err)
		}
		s := oneGetFile(t, string(res))
		got, _ := os.ReadFile(filepath.Join(out, "pkg.zip"))
		if !bytes.Equal(got, data) {
			t.Fatalf("seed %d: wrong content", seed)
		}
		served := mirrors[0].Bytes.Load() + mirrors[1].Bytes.Load()
		waste := served - int64(len(data))
		t.Logf("seed %d: resumed %d bytes, served %d, %d twice", seed, s.Resumed, served, waste)
		if waste > int64(len(data))/10 {
			t.Errorf("seed %d: %d bytes fetched twice (resumed %d)", seed, waste, s.Resumed)
		}
	}
}

// TestGetUnpack packs the example tree, serves the package from a fake
// mirror and fetches it with --unpack: the tree comes out.
func TestGetUnpack(t *testing.T) {
	t.Parallel()
	dump := t.TempDir()
	if code, _, errs := rsdump(t, "pack", "../../testdata/example", "--base-url", "http://127.0.0.1/rs/", "-o", dump, "--quiet"); code != exitOK {
		t.Fatalf("pack: %s", errs)
	}
	data, err := os.ReadFile(filepath.Join(dump, "resourcedump-00001.zip"))
	if err != nil {
		t.Fatal(err)
	}
	s, _ := mt.Server(bytes.NewReader(data), int64(len(data)), "p.zip")
	t.Cleanup(s.Close)
	ph, _ := metalink.NewPieceHasher("sha-256", 16<<10)
	ph.Write(data)
	sum := sha256.Sum256(data)
	size := int64(len(data))
	var b bytes.Buffer
	metalink.Encode(&b, &metalink.Metalink{Files: []metalink.File{{Name: "resourcedump-00001.zip", Size: &size,
		Hashes: []metalink.Hash{{Type: "sha-256", Value: hex.EncodeToString(sum[:])}}, Pieces: []metalink.Pieces{ph.Pieces()},
		URLs: []metalink.URL{{URL: s.URL + "/p.zip"}}}}})
	meta := filepath.Join(t.TempDir(), "p.meta4")
	os.WriteFile(meta, b.Bytes(), 0o644)
	tree := t.TempDir()
	if code, _, errs := rsdump(t, "get", meta, "-o", t.TempDir(), "--unpack", tree, "--base-url", "http://127.0.0.1/rs/", "-q"); code != exitOK {
		t.Fatalf("get --unpack: exit %d: %s", code, errs)
	}
	want, _ := os.ReadFile("../../testdata/example/notes/b.txt")
	got, err := os.ReadFile(filepath.Join(tree, "notes", "b.txt"))
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("notes/b.txt not unpacked: %v", err)
	}
}

// testGetInterrupted sends SIGINT mid-download: rsdump exits 130 and
// leaves .part and a state file from which the next run resumes.
func testGetInterrupted(t *testing.T, bin string) {
	data, meta, _ := getFixture(t, 8<<20, 4<<20)
	out := t.TempDir()
	args := []string{"get", meta, "-o", out, "-q", "--json"}
	cmd := exec.Command(bin, args...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(400 * time.Millisecond)
	cmd.Process.Signal(os.Interrupt)
	err := cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != exitCanceled {
		t.Fatalf("after SIGINT: %v, want exit %d", err, exitCanceled)
	}
	for _, n := range []string{"pkg.zip.part", "pkg.zip.rsdump-state"} {
		if _, err := os.Stat(filepath.Join(out, n)); err != nil {
			t.Errorf("after SIGINT: %v", err)
		}
	}
	res, err := exec.Command(bin, args...).Output()
	var rep getReport
	json.Unmarshal(res, &rep)
	var s getSummary
	if len(rep.Files) == 1 {
		s = rep.Files[0]
	}
	if got, _ := os.ReadFile(filepath.Join(out, "pkg.zip")); err != nil || !bytes.Equal(got, data) || s.Resumed == 0 {
		t.Errorf("resume after SIGINT: %v, resumed %d", err, s.Resumed)
	}
}

// --min-speed takes a size per second; 0 turns the check off, which the
// engine spells as a negative value (its zero means the default).
func TestGetMinSpeedFlag(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		v    int64
		want int64
	}{{1 << 10, 1 << 10}, {64 << 10, 64 << 10}, {0, -1}} {
		f := getFlags{connections: 1, perMirror: 1, files: 1, maxFailures: 1, stall: time.Second, minSpeed: tc.v, layout: "url"}
		o, err := f.options([]string{"x.meta4"})
		if err != nil || o.MinSpeed != tc.want {
			t.Errorf("--min-speed %d: MinSpeed %d, %v; want %d", tc.v, o.MinSpeed, err, tc.want)
		}
	}
	if code, _, stderr := rsdump(t, "get", "--min-speed", "fast", "x.meta4"); code != exitUsage || !strings.Contains(stderr, "min-speed") {
		t.Errorf("--min-speed fast: exit %d, %q; want a usage error naming the flag", code, stderr)
	}
}
