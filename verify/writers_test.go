package verify_test

import (
	"archive/zip"
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/rsdump/rsdump/internal/verifytest"
	"github.com/rsdump/rsdump/verify"
)

// writers re-zip a package's contents (manifest.xml and resources/, in the
// working directory) into the file named by $0, the way users do with the
// tools they have: to a file, streamed through a pipe, with ZIP64 forced.
var writers = []struct{ name, tool, script string }{
	{"zip", "zip", `zip -qr "$0" manifest.xml resources`},
	{"zip-fz", "zip", `zip -qr -fz "$0" manifest.xml resources`},
	{"zip-pipe", "zip", `zip -qr - manifest.xml resources | cat > "$0"`},
	{"7z", "7z", `7z a -tzip -bso0 "$0" manifest.xml resources`},
	{"bsdtar", "bsdtar", `bsdtar -a -cf "$0" manifest.xml resources`},
	{"bsdtar-pipe", "bsdtar", `bsdtar --format zip -cf - manifest.xml resources | cat > "$0"`},
	{"python-zip64", "python3", `python3 -c "$PYZIP" zip64 "$0"`},
	{"python-stream", "python3", `python3 -c "$PYZIP" stream "$0"`},
}

const pyZip = `import io, os, sys, zipfile
mode, out = sys.argv[1], sys.argv[2]
class Pipe(io.RawIOBase):  # not seekable: zipfile writes data descriptors
    def __init__(self, f): self.f = f
    def writable(self): return True
    def write(self, b): return self.f.write(b)
with open(out, "wb") as f:
    with zipfile.ZipFile(Pipe(f) if mode == "stream" else f, "w", zipfile.ZIP_DEFLATED) as z:
        for root, _, files in os.walk("."):
            for name in sorted(files):
                p = os.path.join(root, name)[2:]
                with open(p, "rb") as src, z.open(p, "w", force_zip64=(mode == "zip64")) as dst:
                    dst.write(src.read())
`

// TestArchivesFromOtherWriters: a package re-zipped by Info-ZIP, 7-Zip,
// bsdtar or Python verifies clean: the local header checks accept what
// real writers write (sizes in descriptors, ZIP64 fields, directories).
func TestArchivesFromOtherWriters(t *testing.T) {
	dir := t.TempDir()
	unzipTo(t, verifytest.Intact(t), dir)
	for _, w := range writers {
		t.Run(w.name, func(t *testing.T) {
			if _, err := exec.LookPath(w.tool); err != nil {
				t.Skipf("%s not installed: this writer is skipped", w.tool)
			}
			out := filepath.Join(t.TempDir(), "p.zip")
			cmd := exec.Command("sh", "-c", w.script, out)
			cmd.Dir, cmd.Env = dir, append(os.Environ(), "PYZIP="+pyZip)
			if b, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("%s: %v\n%s", w.script, err, b)
			}
			sum, fs := run(t, verify.Options{}, out)
			if sum.Problems() > 0 || sum.OK != len(verifytest.BaseFiles) {
				t.Errorf("%d verified, %d problems:\n%s", sum.OK, sum.Problems(), dump(fs))
			}
		})
	}
}

// unzipTo extracts z into dir.
func unzipTo(t *testing.T, z []byte, dir string) {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader(z), int64(len(z)))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range zr.File {
		path := filepath.Join(dir, filepath.FromSlash(f.Name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		r, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(r)
		r.Close()
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
