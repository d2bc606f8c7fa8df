package layout_test

import (
	"testing"

	"github.com/rsdump/rsdump/layout"
)

func TestIsOutput(t *testing.T) {
	t.Parallel()
	yes := []string{
		"resourcedump.xml", "resourcedump-00001.zip", "resourcedump-00001.manifest.xml", "resourcedump-00001.zip.meta4",
		"resourcedump-part00002.xml", "resourcedump-123456.zip",
		"changedump.xml", "changedump-00003.zip", "changedump-00003.manifest.xml", "changedump-00003.zip.meta4", "changedump-part00001.xml",
		"resourcelist.xml", "resourcelist-part00001.xml", "changelist.xml", "changelist-part00001.xml",
		"capabilitylist.xml", ".well-known/resourcesync",
	}
	no := []string{
		"", ".rsdump-pack.journal", ".resourcedump.xml.tmp123", "resourcedump-00001.zip.tmp", "resourcedump-1.zip",
		"resourcedump.xml~", "x/resourcedump.xml", "../resourcedump.xml", ".well-known", ".well-known/other",
		"resourcedump-00001.zip/manifest.xml", "capabilitylist.xml.bak", "state.json", ".rsdump/state.json",
		"resourcelist-.xml", "resourcelist-a/b.xml", "index.html",
	}
	for _, n := range yes {
		if !layout.IsOutput(n) {
			t.Errorf("layout.IsOutput(%q) = false, want true", n)
		}
	}
	for _, n := range no {
		if layout.IsOutput(n) {
			t.Errorf("layout.IsOutput(%q) = true, want false", n)
		}
	}
}
