package unpack

// SetHook makes f run at each commit point (Hook*); tests only.
func SetHook(f func(point string, n int)) { hook = f }
