package unpack_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/rsdump/rsdump/finding"
	"github.com/rsdump/rsdump/internal/httpc"
	"github.com/rsdump/rsdump/internal/httpc/httpctest"
	"github.com/rsdump/rsdump/internal/verifytest"
	"github.com/rsdump/rsdump/layout"
	"github.com/rsdump/rsdump/pack"
	"github.com/rsdump/rsdump/transfer"
	"github.com/rsdump/rsdump/unpack"
)

// TestUnpackUnansweredDocument: a dump document URL on such a server fails
// Unpack within the timeout, with an error naming the URL.
func TestUnpackUnansweredDocument(t *testing.T) {
	t.Parallel()
	for name, base := range httpctest.Unanswering(t) {
		u := base + "/" + layout.DumpName
		var fs []finding.Finding
		opts := unpack.Options{Client: shortClient, Mapper: mapper(t), Events: finding.OnFindings(func(f finding.Finding) { fs = append(fs, f) })}
		start := time.Now()
		_, err := unpack.Unpack(context.Background(), u, t.TempDir(), opts)
		if el := time.Since(start); el > 3*time.Second {
			t.Errorf("%s: took %s", name, el)
		}
		if !namesURL(err, fs, u) || name == "stalled" && !namesURL(err, fs, "stalled") {
			t.Errorf("%s: neither the error %v nor a finding names %s:\n%s", name, err, u, dump(fs))
		}
	}
}

// TestUnpackUnansweredPackage: a package URL on such a server is reported,
// naming the URL, within the timeout, and nothing is written.
func TestUnpackUnansweredPackage(t *testing.T) {
	t.Parallel()
	for name, base := range httpctest.Unanswering(t) {
		u := base + "/p.zip"
		start := time.Now()
		opts := unpack.Options{Client: shortClient, Transfer: transfer.Options{StallTimeout: httpctest.ShortWait, MaxFailures: 1}}
		res, fs := run(t, u, t.TempDir(), opts)
		if el := time.Since(start); el > 3*time.Second {
			t.Errorf("%s: took %s", name, el)
		}
		if !namesURL(nil, fs, u) || res.Written != 0 {
			t.Errorf("%s: no error naming %s, or files written: %+v\n%s", name, u, res, dump(fs))
		}
	}
}

// TestUnpackDefaultClient: with no Client, unpack's requests go through
// rsdump's client, whose User-Agent names rsdump.
func TestUnpackDefaultClient(t *testing.T) {
	t.Parallel()
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
	res, fs := run(t, srv.URL+"/"+layout.DumpName, t.TempDir(), unpack.Options{})
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

// namesURL reports whether err, or else an error finding, names url.
func namesURL(err error, fs []finding.Finding, url string) bool {
	if err != nil {
		return strings.Contains(err.Error(), url)
	}
	for _, f := range fs {
		if f.Severity == finding.Error && strings.Contains(f.Source+" "+f.Msg, url) {
			return true
		}
	}
	return false
}

var shortClient = httpc.New(httpc.Options{ResponseHeaderTimeout: httpctest.ShortWait, StallTimeout: httpctest.ShortWait})
