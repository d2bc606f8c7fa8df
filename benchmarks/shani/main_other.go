//go:build !amd64 || purego

// Command shani measures the SHA extensions' round instruction; it only
// runs on amd64.
package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "shani: needs amd64")
	os.Exit(1)
}
