package transfer

import (
	"testing"
	"time"

	"github.com/rsdump/rsdump/internal/httpc"
)

func TestMirrorHealth(t *testing.T) {
	t.Parallel()
	m := &mirror{}
	for i := range 20 {
		m.record(i%20 == 0) // 5% bad
	}
	if m.mostlyBad() || m.limit(4) != 4 {
		t.Errorf("5%% bad: mostlyBad %v, limit %d", m.mostlyBad(), m.limit(4))
	}
	for i := range 16 {
		m.record(i%4 == 0) // 25% bad: demoted, kept
	}
	if m.mostlyBad() || m.limit(4) != 3 {
		t.Errorf("25%% bad: mostlyBad %v, limit %d", m.mostlyBad(), m.limit(4))
	}
	for range 9 {
		m.record(true)
	}
	if !m.mostlyBad() {
		t.Errorf("9 of 16 bad: not mostlyBad (rate %.2f)", m.errRate())
	}
}

func TestMirrorOrder(t *testing.T) {
	t.Parallel()
	f := File{Name: "f", Mirrors: []Mirror{
		{URL: "http://a/f", Priority: 1},
		{URL: "http://b/f", Priority: 2, Location: "de"},
		{URL: "http://c/f"},
		{URL: "http://d/f", Priority: 5, Pref: true},
		{URL: "ftp://e/f"},
	}}
	if _, err := newMirrors(f, nil); err == nil {
		t.Error("ftp mirror accepted")
	}
	f.Mirrors = f.Mirrors[:4]
	ms, err := newMirrors(f, []string{"de"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range ms {
		got = append(got, m.url[7:8])
	}
	if want := "dbac"; got[0]+got[1]+got[2]+got[3] != want {
		t.Errorf("order %v, want %s", got, want)
	}
	if ms[0].host != "d:80" {
		t.Errorf("host %q", ms[0].host)
	}
}

func TestBackoff(t *testing.T) {
	fastRetries = false
	defer func() { fastRetries = true }()
	for n := range 20 {
		d := backoff(n, 0)
		lo := min(250*time.Millisecond<<n, 30*time.Second) / 2
		if n > 16 {
			lo = 15 * time.Second
		}
		if d < lo || d > 30*time.Second {
			t.Errorf("backoff(%d) = %v, want in [%v, 30s]", n, d, lo)
		}
	}
	if d := backoff(0, 7*time.Second); d != 7*time.Second {
		t.Errorf("Retry-After 7s: waited %v", d)
	}
	if d := httpc.ParseRetryAfter("120", time.Now()); d != 2*time.Minute {
		t.Errorf("Retry-After 120 = %v", d)
	}
	now := time.Now()
	if d := httpc.ParseRetryAfter(now.Add(time.Minute).UTC().Format(http1123), now); d < 58*time.Second || d > time.Minute {
		t.Errorf("Retry-After date = %v", d)
	}
}

const http1123 = "Mon, 02 Jan 2006 15:04:05 GMT"
