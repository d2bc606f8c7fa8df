package safepath_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rsdump/rsdump/finding"
	"github.com/rsdump/rsdump/internal/safepath"
	"github.com/rsdump/rsdump/metalink"
	"github.com/rsdump/rsdump/pkgread"
	"github.com/rsdump/rsdump/resourcesync"
)

// hostile names every reader must refuse, with the kind of problem.
var hostile = []struct {
	name string
	kind safepath.Kind
}{
	{"", safepath.Missing},
	{"../x", safepath.Traversal},
	{"a/../../x", safepath.Traversal},
	{"a/..", safepath.Traversal},
	{"..", safepath.Traversal},
	{".", safepath.Traversal},
	{"./a", safepath.Traversal},
	{"a/./b", safepath.Traversal},
	{"/etc/passwd", safepath.Traversal},
	{"//host/share/x", safepath.Traversal},
	{`C:\Windows\x`, safepath.Traversal},
	{"c:x", safepath.Traversal},
	{"Z:/x", safepath.Traversal},
	{`a\b`, safepath.Traversal},
	{`..\..\x`, safepath.Traversal},
	{"a//b", safepath.Invalid},
	{"x\x00y", safepath.Invalid},
	{"x\ny", safepath.Invalid},
	{"x\x1b[2Jy", safepath.Invalid},
	{"a\x7f", safepath.Invalid},
	{"\xff\xfe", safepath.Invalid},
	{strings.Repeat("x", 256), safepath.Invalid},
	{"d/" + strings.Repeat("y", 300) + "/f", safepath.Invalid},
}

var fine = []string{"pkg.zip", "a/b/c.zip", "log/.hidden", "~tmp", "é/ü.txt", "a b/c", "x..y", strings.Repeat("x", 255)}

// verify (ZIP entries, bitstream paths), metalink (file names) and
// resourcesync (manifest paths) apply the same rules: each refuses every
// hostile name for the same reason, with a message that names it, and
// accepts the same ordinary names.
func TestVerifyAndMetalinkAgree(t *testing.T) {
	t.Parallel()
	for _, c := range hostile {
		var e *safepath.Error
		if err := safepath.Check(c.name); !errors.As(err, &e) || e.Kind != c.kind || e.Name != c.name {
			t.Errorf("Check(%q) = %v, want kind %d", c.name, err, c.kind)
			continue
		}
		verr := pkgread.SafeName(c.name)
		if verr == nil || !strings.Contains(verr.Error(), e.Reason) {
			t.Errorf("pkgread.SafeName(%q) = %v, want %q", c.name, verr, e.Reason)
		}
		merr := metalink.CheckName(c.name)
		var p *finding.Finding
		if !errors.As(merr, &p) || p.Code != metalinkCode(c.kind) {
			t.Errorf("metalink.CheckName(%q) = %v, want %s", c.name, merr, metalinkCode(c.kind))
			continue
		}
		if c.name != "" && !manifestRefuses("/"+c.name, e.Reason) {
			t.Errorf("resourcesync accepts manifest path %q", "/"+c.name)
		}
		if c.kind != safepath.Missing && (!strings.Contains(p.Msg, e.Reason) || len(c.name) < 40 && !strings.Contains(p.Msg, fmt.Sprintf("%q", c.name))) {
			t.Errorf("metalink message %q does not name %q and say %q", p.Msg, c.name, e.Reason)
		}
	}
	for _, name := range fine {
		if err := pkgread.SafeName(name); err != nil {
			t.Errorf("pkgread.SafeName(%q) = %v", name, err)
		}
		if err := metalink.CheckName(name); err != nil {
			t.Errorf("metalink.CheckName(%q) = %v", name, err)
		}
		if manifestRefuses("/"+name, "") {
			t.Errorf("resourcesync refuses manifest path %q", "/"+name)
		}
	}
}

// manifestRefuses reports whether a Resource Dump Manifest entry with
// path p has an error (saying why, when why is not "").
func manifestRefuses(p, why string) bool {
	h := resourcesync.Header{MD: resourcesync.MD{Capability: resourcesync.CapResourceDumpManifest, At: time.Unix(0, 0)}}
	u := resourcesync.URL{Loc: "http://127.0.0.1/a", Lastmod: time.Unix(0, 0), MD: &resourcesync.MD{Path: p}}
	for _, pr := range resourcesync.ValidateEntry(h, 1, u) {
		if pr.Severity == finding.Error && strings.Contains(pr.Msg, why) {
			return true
		}
	}
	return false
}

func metalinkCode(k safepath.Kind) string {
	switch k {
	case safepath.Missing:
		return metalink.CodeNameMissing
	case safepath.Traversal:
		return metalink.CodeNameTraversal
	}
	return metalink.CodeNameInvalid
}
