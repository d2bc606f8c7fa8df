package unpack_test

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
	"github.com/rsdump/rsdump/unpack"
	"github.com/rsdump/rsdump/verify"
	"github.com/rsdump/rsdump/verify/verifytest"
)

const shortWait = 300 * time.Millisecond

var shortClient = httpc.New(httpc.Options{ResponseHeaderTimeout: shortWait, StallTimeout: shortWait})

// unanswering returns the base URLs of a server that accepts and never
// answers and of one that sends headers and then stalls the body.
func unanswering(t *testing.T) map[string]string {
	return map[string]string{
		"silent":  httpctest.Silent(t),
		"stalled": httpctest.Stalling(t, []byte(strings.Repeat("<urlset> ", 1000)), 20).URL,
	}
}

// TestUnpackUnansweredDocument: a dump document URL on such a server fails
// Unpack within the timeout, with an error naming the URL.
func TestUnpackUnansweredDocument(t *testing.T) {
	for name, base := range unanswering(t) {
		u := base + "/" + pack.DumpName
		start := time.Now()
		opts := unpack.Options{Client: shortClient, Mapper: mapper(t)}
		_, err := unpack.Unpack(context.Background(), u, t.TempDir(), opts)
		if el := time.Since(start); el > 3*time.Second {
			t.Errorf("%s: took %s", name, el)
		}
		if err == nil || !strings.Contains(err.Error(), u) {
			t.Errorf("%s: error %v does not name %s", name, err, u)
		}
	}
}

// TestUnpackUnansweredPackage: a package URL on such a server is reported,
// naming the URL, within the timeout, and nothing is written.
func TestUnpackUnansweredPackage(t *testing.T) {
	for name, base := range unanswering(t) {
		u := base + "/p.zip"
		start := time.Now()
		res, fs := run(t, u, t.TempDir(), unpack.Options{Client: shortClient})
		if el := time.Since(start); el > 3*time.Second {
			t.Errorf("%s: took %s", name, el)
		}
		found := false
		for _, f := range fs {
			found = found || f.Severity == verify.Error && strings.Contains(f.Source+" "+f.Msg, u)
		}
		if !found || res.Written != 0 {
			t.Errorf("%s: no error naming %s, or files written: %+v\n%s", name, u, res, dump(fs))
		}
	}
}

// TestUnpackDefaultClient: with no Client, unpack's requests go through
// rsdump's client, whose User-Agent names rsdump.
func TestUnpackDefaultClient(t *testing.T) {
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
	res, fs := run(t, srv.URL+"/"+pack.DumpName, t.TempDir(), unpack.Options{})
	if res.Problems() != 0 || res.Written == 0 {
		t.Fatalf("%+v\n%s", res, dump(fs))
	}
	close(agents)
	for ua := range agents {
		if !strings.HasPrefix(ua, "rsdump/") {
			t.Errorf("User-Agent %q", ua)
		}
	}
}
