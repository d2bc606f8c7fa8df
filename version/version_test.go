package version

import (
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

func TestFromBuildInfo(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		bi   debug.BuildInfo
		want Info
	}{
		{"checkout", debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: Module, Version: "(devel)"},
			Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "abc123"}, {Key: "vcs.modified", Value: "true"}}},
			Info{Version: "devel", Revision: "abc123", Modified: true, Go: "go1.26.8"}},
		{"release", debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: Module, Version: "v1.2.3"},
			Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "abc123"}, {Key: "vcs.modified", Value: "false"}}},
			Info{Version: "v1.2.3", Revision: "abc123", Go: "go1.26.8"}},
		{"dependency", debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "example.org/tool", Version: "v0.1.0"},
			Deps: []*debug.Module{{Path: "golang.org/x/sync", Version: "v0.24.0"}, {Path: Module, Version: "v0.9.0"}}},
			Info{Version: "v0.9.0", Go: "go1.26.8"}},
		{"no version", debug.BuildInfo{Main: debug.Module{Path: Module}},
			Info{Version: "devel", Go: runtime.Version()}},
	}
	for _, c := range cases {
		if got := fromBuildInfo(&c.bi); got != c.want {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
}

func TestUserAgent(t *testing.T) {
	t.Parallel()
	ua := UserAgent()
	if !strings.HasPrefix(ua, "rsdump/"+Version()+" ") || !strings.HasSuffix(ua, "(+https://github.com/rsdump/rsdump)") {
		t.Errorf("UserAgent() = %q", ua)
	}
	if got := userAgent("v1.2.3"); got != "rsdump/v1.2.3 (+https://github.com/rsdump/rsdump)" {
		t.Errorf("userAgent = %q", got)
	}
	if Version() == "" || GoVersion() != runtime.Version() {
		t.Errorf("Version %q, GoVersion %q", Version(), GoVersion())
	}
}

func TestString(t *testing.T) {
	t.Parallel()
	i := Info{Version: "devel", Revision: "abc", Modified: true, Go: "go1.26.8"}
	if got := i.String(); got != "rsdump devel (abc+dirty, go1.26.8)" {
		t.Errorf("%q", got)
	}
	i.Revision = ""
	if got := i.String(); got != "rsdump devel (go1.26.8)" {
		t.Errorf("%q", got)
	}
}
