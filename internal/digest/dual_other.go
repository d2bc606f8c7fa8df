//go:build !amd64 || purego

package digest

const haveDual = false

func blockDual(a, b *[8]uint32, p []byte) { panic("digest: blockDual without SHA extensions") }

// SHANI reports whether WriteBoth runs on the SHA extensions.
func SHANI() bool { return false }
