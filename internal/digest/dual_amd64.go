//go:build !purego

package digest

//go:noescape
func blockDual(a, b *[8]uint32, p []byte)

func cpuid(leaf, sub uint32) (eax, ebx, ecx, edx uint32)

// haveDual reports SHA extensions with SSSE3 and SSE4.1, which blockDual
// uses (CPUID leaf 7 EBX bit 29; leaf 1 ECX bits 9 and 19).
var haveDual = func() bool {
	maxLeaf, _, _, _ := cpuid(0, 0)
	if maxLeaf < 7 {
		return false
	}
	_, _, ecx1, _ := cpuid(1, 0)
	_, ebx7, _, _ := cpuid(7, 0)
	return ecx1&(1<<9) != 0 && ecx1&(1<<19) != 0 && ebx7&(1<<29) != 0
}()

// SHANI reports whether WriteBoth runs on the SHA extensions.
func SHANI() bool { return haveDual }
