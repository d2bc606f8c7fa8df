package verify

import (
	"bytes"
	"fmt"
	"io"
	"reflect"

	"github.com/rsdump/rsdump/finding"
	"github.com/rsdump/rsdump/resourcesync"
)

// CompareManifests compares a package's manifest.xml with the detached copy
// a dump document links to (rel="contents"), which §11.1 and §13.1 require
// to correspond. Byte-identical copies pass. Copies that describe the same
// bitstreams (loc, lastmod, length, hashes, type, change) but give other
// path values are a warning: resync writes local filesystem paths into the
// detached copy, which a Destination never uses. Anything else is an
// error, since a Destination choosing packages by their detached manifest
// would be misled. It reports whether the copies differ and how.
func CompareManifests(inside, detached []byte) (finding.Finding, bool) {
	if bytes.Equal(inside, detached) {
		return finding.Finding{}, false
	}
	msg, pathsOnly := describeDifference(inside, detached)
	f := finding.Finding{Severity: finding.Error, Code: finding.CheckDetached, Msg: "detached manifest differs from manifest.xml: " + msg}
	if pathsOnly {
		f.Severity = finding.Warning
		f.Msg = "detached manifest differs from manifest.xml only in path attributes (" + msg + ")"
	}
	return f, true
}

// describeDifference decodes both manifests side by side and returns the
// first difference, and whether every difference is in a path attribute.
func describeDifference(a, b []byte) (string, bool) {
	da, err := resourcesync.NewDecoder(bytes.NewReader(a))
	if err != nil {
		return "manifest.xml does not decode", false
	}
	db, err := resourcesync.NewDecoder(bytes.NewReader(b))
	if err != nil {
		return "detached copy does not decode: " + err.Error(), false
	}
	if !reflect.DeepEqual(da.Header(), db.Header()) {
		return "the headers differ", false
	}
	first := ""
	for n := 1; ; n++ {
		ua, erra := da.Next()
		ub, errb := db.Next()
		if erra == io.EOF && errb == io.EOF {
			return orText(first, "the bytes differ, the content does not"), true
		}
		if erra != nil || errb != nil {
			return fmt.Sprintf("entry %d: present in one copy only, or does not decode", n), false
		}
		same, pathOnly := sameEntry(ua, ub)
		if !same && !pathOnly {
			return fmt.Sprintf("entry %d (%s) differs", n, ua.Loc), false
		}
		if !same && first == "" {
			first = fmt.Sprintf("first at entry %d: %q and %q", n, ua.MD.Path, ub.MD.Path)
		}
	}
}

// sameEntry reports whether two entries are equal, and if not whether they
// differ only in the path attribute.
func sameEntry(a, b resourcesync.URL) (same, pathOnly bool) {
	if reflect.DeepEqual(a, b) {
		return true, false
	}
	if a.MD == nil || b.MD == nil {
		return false, false
	}
	ma, mb := *a.MD, *b.MD
	ma.Path, mb.Path = "", ""
	a.MD, b.MD = &ma, &mb
	return false, reflect.DeepEqual(a, b)
}

func orText(s, alt string) string {
	if s == "" {
		return alt
	}
	return s
}
