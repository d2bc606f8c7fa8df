//go:build !linux

package unpack

import (
	"errors"
	"os"
)

// syncfsWorks is false where there is no syncfs(2): each staged file is
// synced on its own, several at a time (syncer).
var syncfsWorks = false

func syncfs(*os.File) error { return errors.ErrUnsupported }
