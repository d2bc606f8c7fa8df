// Package version says which rsdump this is: the module version, the VCS
// revision it was built from and the Go toolchain, as the build recorded
// them (runtime/debug.ReadBuildInfo), and the User-Agent rsdump sends.
package version

import (
	"runtime"
	"runtime/debug"
	"sync"
)

// Module is rsdump's module path.
const Module = "github.com/rsdump/rsdump"

// Info is what the build recorded.
type Info struct {
	Version  string `json:"version"`            // module version ("v1.2.3"), or "devel" for a build from a checkout
	Revision string `json:"revision,omitempty"` // VCS revision, "" when the build recorded none
	Modified bool   `json:"modified,omitempty"` // the working tree had uncommitted changes
	Go       string `json:"go"`                 // Go toolchain ("go1.26.8")
}

var info = sync.OnceValue(func() Info {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return Info{Version: "devel", Go: runtime.Version()}
	}
	return fromBuildInfo(bi)
})

// fromBuildInfo reads the version of rsdump's module, the main module in
// the rsdump binary and a dependency in a program that imports rsdump.
func fromBuildInfo(bi *debug.BuildInfo) Info {
	i := Info{Version: bi.Main.Version, Go: bi.GoVersion}
	if bi.Main.Path != Module {
		i.Version = ""
		for _, d := range bi.Deps {
			if d.Path == Module {
				i.Version = d.Version
				if d.Replace != nil && d.Replace.Version != "" {
					i.Version = d.Replace.Version
				}
			}
		}
	}
	if i.Version == "" || i.Version == "(devel)" {
		i.Version = "devel"
	}
	if i.Go == "" {
		i.Go = runtime.Version()
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			i.Revision = s.Value
		case "vcs.modified":
			i.Modified = s.Value == "true"
		}
	}
	return i
}

// Get returns what the build recorded.
func Get() Info { return info() }

// Version is the module version, "devel" for a build from a checkout.
func Version() string { return info().Version }

// Revision is the VCS revision and whether the tree was modified; "" when
// the build recorded none (go test, go run, a build with -buildvcs=false).
func Revision() (rev string, modified bool) {
	i := info()
	return i.Revision, i.Modified
}

// GoVersion is the Go toolchain that built the binary.
func GoVersion() string { return info().Go }

// UserAgent is what rsdump sends in the User-Agent header:
// "rsdump/VERSION (+https://github.com/rsdump/rsdump)".
func UserAgent() string { return userAgent(info().Version) }

func userAgent(v string) string {
	return "rsdump/" + v + " (+https://" + Module + ")"
}

// String is one line for --version: "rsdump VERSION (REVISION[+dirty], GO)".
func (i Info) String() string {
	s := "rsdump " + i.Version + " ("
	if i.Revision != "" {
		s += i.Revision
		if i.Modified {
			s += "+dirty"
		}
		s += ", "
	}
	return s + i.Go + ")"
}
