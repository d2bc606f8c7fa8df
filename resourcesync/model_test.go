package resourcesync

import (
	"testing"
	"time"
)

// TestChangeTime: the time of a change is the rs:md datetime of
// ResourceSync 1.1, else the <lastmod> of a 1.0 document, whose lastmod
// is that time; a 1.0 deletion's lastmod is not known to be (resync
// writes the deleted resource's own time there).
func TestChangeTime(t *testing.T) {
	t.Parallel()
	lastmod := mustTime(t, "2024-01-01T00:00:00Z")
	changed := mustTime(t, "2024-01-02T03:04:05.5Z")
	tests := []struct {
		name string
		u    URL
		want time.Time
		ok   bool
	}{
		{"1.1 update", URL{Lastmod: lastmod, MD: &MD{Change: ChangeUpdated, Datetime: changed}}, changed, true},
		{"1.1 deletion", URL{Lastmod: lastmod, MD: &MD{Change: ChangeDeleted, Datetime: changed}}, changed, true},
		{"1.1 deletion, resource time unknown", URL{MD: &MD{Change: ChangeDeleted, Datetime: changed}}, changed, true},
		{"1.0 creation", URL{Lastmod: lastmod, MD: &MD{Change: ChangeCreated}}, lastmod, true},
		{"1.0 entry without rs:md", URL{Lastmod: lastmod}, lastmod, true},
		{"1.0 deletion", URL{Lastmod: lastmod, MD: &MD{Change: ChangeDeleted}}, time.Time{}, false},
		{"no time", URL{MD: &MD{Change: ChangeUpdated}}, time.Time{}, false},
	}
	for _, tt := range tests {
		got, ok := tt.u.ChangeTime()
		if !got.Equal(tt.want) || ok != tt.ok {
			t.Errorf("%s: ChangeTime() = %s, %v; want %s, %v", tt.name, got, ok, tt.want, tt.ok)
		}
	}
}
