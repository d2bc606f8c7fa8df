package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
)

const versionHelp = `Usage: rsdump version [--json]

Prints rsdump's module version, the VCS revision it was built from (with
"+dirty" when the tree had changes) and the Go version that built it.
rsdump --version prints the same.

Examples:
  rsdump version
  rsdump version --json
`

// buildInfo is what rsdump version prints. It reads the build information
// itself; internal/version will take this over.
type buildInfo struct {
	Version  string `json:"version"`
	Revision string `json:"revision,omitempty"`
	Time     string `json:"time,omitempty"`
	Go       string `json:"go"`
}

func readBuildInfo() buildInfo {
	b := buildInfo{Version: "(devel)", Go: runtime.Version()}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return b
	}
	if v := bi.Main.Version; v != "" {
		b.Version = v
	}
	if bi.GoVersion != "" {
		b.Go = bi.GoVersion
	}
	dirty := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			b.Revision = s.Value
		case "vcs.time":
			b.Time = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if dirty && b.Revision != "" {
		b.Revision += "+dirty"
	}
	return b
}

func (b buildInfo) String() string {
	rev := b.Revision
	if rev == "" {
		rev = "unknown revision"
	}
	return fmt.Sprintf("rsdump %s (%s) built with %s", b.Version, rev, b.Go)
}

func runVersion(_ context.Context, args []string, stdout, _ io.Writer) error {
	var asJSON bool
	fs := newFlags("version")
	fs.BoolVar(&asJSON, "json", false, "print the version as a JSON object on stdout")
	if err := parse(fs, args, versionHelp, stdout); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("version takes no arguments, got %d", fs.NArg())
	}
	b := readBuildInfo()
	if asJSON {
		return json.NewEncoder(stdout).Encode(b)
	}
	_, err := fmt.Fprintln(stdout, b)
	return err
}
