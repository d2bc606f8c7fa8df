package pack

import (
	"context"
	"testing"
)

// dirOutput is the output of a test writing into dir.
func dirOutput(t testing.TB, dir string) *output {
	t.Helper()
	out, err := openOutput(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	return out
}
