//go:build unix

package serve

import "syscall"

// openFlags open a file without waiting: a FIFO put where a regular file
// was would otherwise hold the request (and an OS thread) until a writer
// comes. Reads of a regular file ignore O_NONBLOCK.
const openFlags = syscall.O_RDONLY | syscall.O_NONBLOCK
