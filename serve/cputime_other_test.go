//go:build !unix

package serve_test

import "time"

func cpuTime() time.Duration { return 0 }
