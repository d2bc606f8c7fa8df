//go:build !unix

package serve

import "os"

// openFlags: without O_NONBLOCK, the check before the open is what keeps
// special files out (Windows has no FIFOs in a directory tree).
const openFlags = os.O_RDONLY
