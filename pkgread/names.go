package pkgread

import (
	"strings"

	"github.com/rsdump/rsdump/internal/safepath"
)

// SafeName reports why a ZIP entry name, or a path relative to a
// destination directory, is unsafe to extract, or returns nil. The rules
// are internal/safepath's, shared with the Metalink reader: names are
// judged in their slash form, the same on every system, so a name that
// would be safe on Linux but not on Windows (a backslash, a drive letter)
// is refused everywhere, since packages move between systems. Directory
// entries carry a trailing slash, which is allowed.
func SafeName(name string) error {
	return safepath.Check(strings.TrimSuffix(name, "/"))
}
