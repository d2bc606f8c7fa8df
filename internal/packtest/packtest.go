// Package packtest packs trees for the tests of the packages that read
// what pack writes (verify, unpack, replica, the CLI). It is apart from
// verifytest because pack's own tests use verifytest, so verifytest
// cannot import pack.
package packtest

import (
	"context"
	"testing"

	"github.com/rsdump/rsdump/internal/verifytest"
	"github.com/rsdump/rsdump/pack"
)

// PackDir packs src into a new temporary directory and returns it. An
// empty o.BaseURL is verifytest.BaseURL and a zero o.At verifytest.Time,
// so that the documents are the same from run to run.
func PackDir(t testing.TB, src string, o pack.Options) string {
	t.Helper()
	out := t.TempDir()
	if o.BaseURL == "" {
		o.BaseURL = verifytest.BaseURL
	}
	if o.At.IsZero() {
		o.At = verifytest.Time
	}
	if _, err := pack.Pack(context.Background(), src, out, o); err != nil {
		t.Fatalf("Pack: %v", err)
	}
	return out
}
