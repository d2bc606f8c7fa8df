package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/rsdump/rsdump/version"
)

const versionHelp = `Usage: rsdump version [--json]

Prints rsdump's module version, the VCS revision it was built from (with
"+dirty" when the tree had changes) and the Go version that built it.
rsdump --version prints the same.

Examples:
  rsdump version
  rsdump version --json
`

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
	b := version.Get()
	if asJSON {
		return json.NewEncoder(stdout).Encode(b)
	}
	_, err := fmt.Fprintln(stdout, b)
	return err
}
