package resourcesync

import (
	"testing"
	"time"
)

func TestParseTime(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want string // RFC 3339 in UTC
	}{
		{"1997", "1997-01-01T00:00:00Z"},
		{"1997-07", "1997-07-01T00:00:00Z"},
		{"1997-07-16", "1997-07-16T00:00:00Z"},
		{"1997-07-16T19:20Z", "1997-07-16T19:20:00Z"},
		{"1997-07-16T19:20+01:00", "1997-07-16T18:20:00Z"},
		{"1997-07-16T19:20-05:30", "1997-07-17T00:50:00Z"},
		{"1997-07-16T19:20:30Z", "1997-07-16T19:20:30Z"},
		{"1997-07-16T19:20:30+01:00", "1997-07-16T18:20:30Z"},
		{"1997-07-16T19:20:30.45+01:00", "1997-07-16T18:20:30.45Z"},
		{"1997-07-16T19:20:30.45Z", "1997-07-16T19:20:30.45Z"},
		{"2024-01-02T03:04:05.123456789Z", "2024-01-02T03:04:05.123456789Z"},
		{"2024-01-02T00:30:00+01:00", "2024-01-01T23:30:00Z"},
		{"2024-02-29", "2024-02-29T00:00:00Z"},
	}
	for _, tt := range tests {
		got, err := ParseTime(tt.in)
		if err != nil {
			t.Errorf("ParseTime(%q): %v", tt.in, err)
			continue
		}
		if s := got.Format(time.RFC3339Nano); s != tt.want {
			t.Errorf("ParseTime(%q) = %s, want %s", tt.in, s, tt.want)
		}
		if got.Location() != time.UTC {
			t.Errorf("ParseTime(%q) location = %v, want UTC", tt.in, got.Location())
		}
	}
}

func TestParseTimeRejects(t *testing.T) {
	t.Parallel()
	for _, in := range []string{
		"",
		"97",
		"19970716",
		"1997-7",
		"1997-07-1",
		"1997-13",
		"1997-02-30",
		"2023-02-29",
		"1997-07-16T19:20:30",     // no zone
		"1997-07-16T19:20",        // no zone
		"1997-07-16T19Z",          // hours only
		"1997-07-16 19:20:30Z",    // space for T
		"1997-07-16t19:20:30Z",    // lowercase t
		"1997-07-16T19:20:30z",    // lowercase z
		"1997-07-16T19:20:30,45Z", // comma
		"1997-07-16T19:20:30.Z",   // dot without digits
		"1997-07-16T19:20.5Z",     // fraction without seconds
		"1997-07-16T19:20:30+0100",
		"1997-07-16T19:20:30+01",
		"1997-07-16T25:20:30Z",
		"1997-07-16T19:60:30Z",
		"1997-07-16T19:20:60Z",
		" 1997-07-16",
		"1997-07-16 ",
		"1997-07-16T19:20:30Z\n",
		"+1997",
		"-1997-07-16",
		"１９９７",
		"1997-07-16T19:20:30ZZ",
	} {
		if got, err := ParseTime(in); err == nil {
			t.Errorf("ParseTime(%q) = %v, want an error", in, got)
		}
	}
}

func TestFormatTime(t *testing.T) {
	t.Parallel()
	cet := time.FixedZone("CET", 3600)
	tests := []struct {
		in   time.Time
		want string
	}{
		{time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC), "2024-01-02T03:04:05Z"},
		{time.Date(2024, 1, 2, 3, 4, 5, 0, cet), "2024-01-02T02:04:05Z"},
		{time.Date(2024, 1, 2, 3, 4, 5, 120000000, time.UTC), "2024-01-02T03:04:05.12Z"},
		{time.Date(2024, 1, 2, 3, 4, 5, 1, time.UTC), "2024-01-02T03:04:05.000000001Z"},
		{time.Date(1997, 7, 16, 0, 30, 0, 0, cet), "1997-07-15T23:30:00Z"},
	}
	for _, tt := range tests {
		if got := FormatTime(tt.in); got != tt.want {
			t.Errorf("FormatTime(%v) = %s, want %s", tt.in, got, tt.want)
		}
		back, err := ParseTime(tt.want)
		if err != nil || !back.Equal(tt.in) {
			t.Errorf("ParseTime(FormatTime(%v)) = %v, %v", tt.in, back, err)
		}
	}
}
