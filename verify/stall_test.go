package verify_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/rsdump/rsdump/internal/httpc"
	"github.com/rsdump/rsdump/internal/httpc/httpctest"
	"github.com/rsdump/rsdump/pack"
	"github.com/rsdump/rsdump/verify"
	"github.com/rsdump/rsdump/verify/verifytest"
)

const shortWait = 300 * time.Millisecond

var shortClient = httpc.New(httpc.Options{ResponseHeaderTimeout: shortWait, StallTimeout: shortWait})

// TestVerifyUnansweredDocument: a dump document URL on a server that
// accepts and never answers, or that stalls in the body, fails Verify
// within the timeout, with an error naming the URL.
func TestVerifyUnansweredDocument(t *testing.T) {
	for name, base := range map[string]string{
		"silent":  httpctest.Silent(t),
		"stalled": httpctest.Stalling(t, []byte(strings.Repeat("<urlset> ", 1000)), 20).URL,
	} {
		u := base + "/" + pack.DumpName
		start := time.Now()
		_, err := verify.Verify(context.Background(), []string{u}, verify.Options{Client: shortClient})
		if el := time.Since(start); el > 3*time.Second {
			t.Errorf("%s: took %s", name, el)
		}
		if err == nil || !strings.Contains(err.Error(), u) {
			t.Errorf("%s: error %v does not name %s", name, err, u)
		}
	}
}

// TestVerifyUnansweredPackage: a dump whose package is on such a server
// reports the package, naming its URL, within the timeout.
func TestVerifyUnansweredPackage(t *testing.T) {
	for name, base := range map[string]string{
		"silent":  httpctest.Silent(t),
		"stalled": httpctest.Stalling(t, make([]byte, 1<<20), 100).URL,
	} {
		out := t.TempDir()
		o := pack.Options{BaseURL: verifytest.BaseURL, DumpURL: base + "/", At: fixedTime}
		if _, err := pack.Pack(t.Context(), tree(t, exampleFiles(t)), out, o); err != nil {
			t.Fatal(err)
		}
		docs := httptest.NewServer(http.FileServer(http.Dir(out)))
		start := time.Now()
		sum, fs := run(t, verify.Options{Client: shortClient}, docs.URL+"/"+pack.DumpName)
		docs.Close()
		if el := time.Since(start); el > 3*time.Second {
			t.Errorf("%s: took %s", name, el)
		}
		u := base + "/resourcedump-00001.zip"
		found := false
		for _, f := range fs {
			found = found || f.Severity == verify.Error && strings.Contains(f.Source+" "+f.Msg, u)
		}
		if !found || sum.Problems() == 0 {
			t.Errorf("%s: no error naming %s: %+v\n%s", name, u, sum, dump(fs))
		}
	}
}

// TestVerifyDefaultClient: with no Client, verify's requests go through
// rsdump's client, whose User-Agent names rsdump.
func TestVerifyDefaultClient(t *testing.T) {
	out := t.TempDir()
	agents := make(chan string, 1000)
	files := http.FileServer(http.Dir(out))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		agents <- r.UserAgent()
		files.ServeHTTP(w, r)
	}))
	defer srv.Close()
	o := pack.Options{BaseURL: verifytest.BaseURL, DumpURL: srv.URL + "/", At: fixedTime}
	if _, err := pack.Pack(t.Context(), tree(t, exampleFiles(t)), out, o); err != nil {
		t.Fatal(err)
	}
	sum, fs := run(t, verify.Options{}, srv.URL+"/"+pack.DumpName)
	if sum.Problems() != 0 || sum.Verified == 0 {
		t.Fatalf("%+v\n%s", sum, dump(fs))
	}
	close(agents)
	for ua := range agents {
		if !strings.HasPrefix(ua, "rsdump/") {
			t.Errorf("User-Agent %q", ua)
		}
	}
}
