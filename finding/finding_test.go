package finding

import (
	"errors"
	"io"
	"sync"
	"testing"
)

func TestFindingString(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		f    Finding
		want string
	}{
		// verify's findings: source, then the entry (or the URI), the check.
		{Finding{Severity: Error, Code: "crc", Source: "p.zip", URI: "http://x/a", Path: "a", Expected: "1", Msg: "mismatch"},
			"error: p.zip: a: crc: mismatch (expected 1, got -)"},
		{Finding{Severity: OK, Code: "package", Source: "http://x/p.zip", URI: "http://x/p.zip"}, "ok: http://x/p.zip: package"},
		{Finding{Severity: Unverified, Code: "hash", Source: "d.xml", URI: "http://x/a", Msg: "no hash"},
			"unverified: d.xml: http://x/a: hash: no hash"},
		// resourcesync's: the header, or an entry and its <loc>.
		{Finding{Severity: Error, Msg: "<rs:md> has no capability"}, "error: <rs:md> has no capability"},
		{Finding{Severity: Warning, Entry: 3, URI: "http://x/a", Msg: "m"}, "warning: http://x/a: entry 3: m"},
		// metalink's: the file, the element, the line.
		{Finding{Severity: Error, Code: "name-traversal", Path: "../x", Element: "file[1]@name", Msg: "bad", Line: 4},
			"error: ../x: file[1]@name: name-traversal: bad (line 4)"},
	} {
		if got := c.f.String(); got != c.want {
			t.Errorf("String() = %q, want %q", got, c.want)
		}
		if got := (&c.f).Error(); got != c.want {
			t.Errorf("Error() = %q, want %q", got, c.want)
		}
	}
}

func TestErr(t *testing.T) {
	t.Parallel()
	fs := []Finding{
		{Severity: Warning, Code: "w"},
		{Severity: Error, Code: "name-traversal", Path: "../x", Element: "file[1]@name", Msg: "bad", Err: io.ErrUnexpectedEOF},
		{Severity: Error, Code: "no-source"},
	}
	err := Err("metalink: ", fs)
	var f *Finding
	if err == nil || !errors.As(err, &f) || f.Code != "name-traversal" || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("Err() = %v", err)
	}
	if want := "metalink: error: ../x: file[1]@name: name-traversal: bad (and 1 more errors)"; err.Error() != want {
		t.Errorf("message %q, want %q", err.Error(), want)
	}
	if !HasErrors(fs) || HasErrors(fs[:1]) {
		t.Error("HasErrors")
	}
	if Err("", fs[:1]) != nil {
		t.Error("warnings alone make an error")
	}
}

func TestSeverity(t *testing.T) {
	t.Parallel()
	for s, want := range map[Severity]string{OK: "ok", Warning: "warning", Unverified: "unverified", Error: "error"} {
		if s.String() != want {
			t.Errorf("%d: %q, want %q", s, s.String(), want)
		}
		if s.Problem() != (s == Unverified || s == Error) {
			t.Errorf("%s.Problem() = %v", s, s.Problem())
		}
	}
}

// TestReporter: findings are counted by severity and passed on one at a
// time; other events pass through; a Reporter's Send feeds another.
func TestReporter(t *testing.T) {
	t.Parallel()
	var got []Event
	var mu sync.Mutex
	top := NewReporter(func(e Event) { mu.Lock(); got = append(got, e); mu.Unlock() })
	inner := NewReporter(top.Send)
	var wg sync.WaitGroup
	for i := range 40 {
		wg.Go(func() { inner.Report(Finding{Severity: Severity(i % 4)}) })
	}
	wg.Wait()
	inner.Send(Progress{Bytes: 5})
	inner.Send(Finding{Severity: Error})
	want := Counts{OK: 10, Warnings: 10, Unverified: 10, Errors: 11}
	if inner.Counts() != want || top.Counts() != want {
		t.Errorf("counts %+v and %+v, want %+v", inner.Counts(), top.Counts(), want)
	}
	if want.Problems() != 21 {
		t.Errorf("Problems() = %d", want.Problems())
	}
	if len(got) != 42 || got[40] != (Progress{Bytes: 5}) {
		t.Errorf("%d events passed on, the 41st %v", len(got), got[40])
	}
	var zero Reporter
	zero.Report(Finding{Severity: Warning})
	zero.Send(Note{Msg: "x"})
	if zero.Counts().Warnings != 1 {
		t.Error("the zero Reporter does not count")
	}
}

func TestOnFindings(t *testing.T) {
	t.Parallel()
	var fs []Finding
	ev := OnFindings(func(f Finding) { fs = append(fs, f) })
	ev(Progress{Bytes: 1})
	ev(Finding{Code: "a"})
	ev(Note{Msg: "n"})
	Send(ev, Finding{Code: "b"})
	Send(nil, Finding{Code: "c"})
	if len(fs) != 2 || fs[0].Code != "a" || fs[1].Code != "b" {
		t.Errorf("findings %v", fs)
	}
}
