package resourcesync

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// TestFuture: a document's own times, and an entry's times of change
// (its <rs:md> times; the <lastmod> of a change with no datetime), later
// than the horizon are FutureErrors naming the document, entry and time;
// a resource's own <lastmod> is not checked.
func TestFuture(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	horizon := now.Add(MaxSkew)
	later, earlier := now.Add(time.Hour), now.Add(-time.Hour)
	for _, c := range []struct {
		name string
		h    Header
		u    URL
		attr string
	}{
		{"header until", Header{MD: MD{Capability: CapChangeList, From: earlier, Until: later}}, URL{}, "until"},
		{"header at", Header{MD: MD{Capability: CapResourceList, At: later}}, URL{}, "at"},
		{"datetime", Header{}, URL{Loc: "http://127.0.0.1/a", MD: &MD{Change: ChangeUpdated, Datetime: later}}, "datetime"},
		{"1.0 change lastmod", Header{}, URL{Loc: "http://127.0.0.1/a", Lastmod: later, MD: &MD{Change: ChangeCreated}}, "lastmod"},
		{"package until", Header{}, URL{Loc: "http://127.0.0.1/p.zip", MD: &MD{From: earlier, Until: later}}, "until"},
		{"resource lastmod", Header{}, URL{Loc: "http://127.0.0.1/a", Lastmod: later}, ""},
		{"1.1 change lastmod", Header{}, URL{Loc: "http://127.0.0.1/a", Lastmod: later, MD: &MD{Change: ChangeUpdated, Datetime: earlier}}, ""},
		{"1.0 deletion lastmod, not a time of change (ChangeTime)", Header{}, URL{Loc: "http://127.0.0.1/a", Lastmod: later, MD: &MD{Change: ChangeDeleted}}, ""},
		{"within the skew", Header{MD: MD{At: now.Add(MaxSkew / 2)}}, URL{}, ""},
	} {
		err := FutureHeader("doc.xml", c.h, horizon)
		if err == nil && c.u.Loc != "" {
			err = FutureEntry("doc.xml", 3, c.u, horizon)
		}
		var fe *FutureError
		switch {
		case c.attr == "" && err != nil:
			t.Errorf("%s: %v, want none", c.name, err)
		case c.attr != "" && (!errors.As(err, &fe) || fe.Attr != c.attr || !errors.Is(err, ErrFuture)):
			t.Errorf("%s: %v, want a FutureError on %s", c.name, err, c.attr)
		case c.attr != "" && (!strings.Contains(err.Error(), "doc.xml") || !strings.Contains(err.Error(), FormatTime(later))):
			t.Errorf("%s: %q does not name the document and the time", c.name, err)
		}
	}
}

// TestLoaderNotAfter: a Loader with NotAfter refuses a document with a
// time past it, and hands over no entry after it.
func TestLoaderNotAfter(t *testing.T) {
	t.Parallel()
	later := time.Now().Add(24 * time.Hour)
	var buf bytes.Buffer
	enc, _ := NewEncoder(&buf, Header{Kind: URLSet, MD: MD{Capability: CapChangeList, From: time.Now().Add(-time.Hour), Until: time.Now()}})
	enc.Encode(URL{Loc: "http://127.0.0.1/a", MD: &MD{Change: ChangeUpdated, Datetime: time.Now()}})
	enc.Encode(URL{Loc: "http://127.0.0.1/b", MD: &MD{Change: ChangeUpdated, Datetime: later}})
	enc.Close()
	var got []string
	l := Loader{NotAfter: Horizon(), Entry: func(_ *Document, _ int, u URL) error { got = append(got, u.Loc); return nil }}
	err := l.Read(context.Background(), "changelist.xml", &buf, nil)
	if !errors.Is(err, ErrFuture) || !strings.Contains(err.Error(), "entry 2 (http://127.0.0.1/b)") {
		t.Fatalf("err = %v", err)
	}
	if len(got) != 1 {
		t.Errorf("entries handed over: %v", got)
	}
}
