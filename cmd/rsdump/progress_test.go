package main

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// TestPlainProgressLine checks the line printed when stderr is not a
// terminal: it names the unit, or what is being done when there is none.
func TestPlainProgressLine(t *testing.T) {
	for _, detail := range []string{"", "resourcedump-00001.zip"} {
		var buf bytes.Buffer
		p := newProgress(&buf, false, "verifying")
		p.last = time.Now().Add(-time.Minute) // due for a line
		p.add(3<<30, detail)
		want := "rsdump: verifying, 3.0 GiB, "
		if detail != "" {
			want = "rsdump: " + detail + ", 3.0 GiB, "
		}
		if got := buf.String(); !strings.HasPrefix(got, want) || !strings.HasSuffix(got, " MB/s\n") {
			t.Errorf("detail %q: line %q, want %q... MB/s", detail, got, want)
		}
	}
}
