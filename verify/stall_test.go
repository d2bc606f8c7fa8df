package verify_test

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
	"github.com/rsdump/rsdump/transfer/pkgfetch"
	"github.com/rsdump/rsdump/verify"
)

// TestVerifyUnansweredDocument: a dump document URL on a server that
// accepts and never answers, or that stalls in the body, fails Verify
// within the timeout, with an error naming the URL.
func TestVerifyUnansweredDocument(t *testing.T) {
	t.Parallel()
	for name, base := range httpctest.Unanswering(t) {
		u := base + "/" + layout.DumpName
		var fs []finding.Finding
		opts := verify.Options{Client: shortClient, Events: finding.OnFindings(func(f finding.Finding) { fs = append(fs, f) })}
		start := time.Now()
		_, err := verify.Verify(context.Background(), []string{u}, opts)
		if el := time.Since(start); el > 3*time.Second {
			t.Errorf("%s: took %s", name, el)
		}
		if !namesURL(err, fs, u) || name == "stalled" && !namesURL(err, fs, "stalled") {
			t.Errorf("%s: neither the error %v nor a finding names %s:\n%s", name, err, u, dump(fs))
		}
	}
}

// TestVerifyUnansweredPackage: a dump whose package is on such a server
// reports the package, naming its URL, within the timeout.
func TestVerifyUnansweredPackage(t *testing.T) {
	t.Parallel()
	for name, base := range httpctest.UnansweringData(t, make([]byte, 1<<20), 100) {
		out := t.TempDir()
		o := pack.Options{BaseURL: verifytest.BaseURL, DumpURL: base + "/", At: fixedTime}
		if _, err := pack.Pack(t.Context(), tree(t, exampleFiles(t)), out, o); err != nil {
			t.Fatal(err)
		}
		docs := httptest.NewServer(http.FileServer(http.Dir(out)))
		start := time.Now()
		sum, fs := run(t, verify.Options{Client: shortClient, Packages: &pkgfetch.Remote{Client: shortClient, Transfer: transfer.Options{StallTimeout: httpctest.ShortWait, MaxFailures: 1}}}, docs.URL+"/"+layout.DumpName)
		docs.Close()
		if el := time.Since(start); el > 3*time.Second {
			t.Errorf("%s: took %s", name, el)
		}
		u := base + "/resourcedump-00001.zip"
		found := false
		for _, f := range fs {
			found = found || f.Severity == finding.Error && strings.Contains(f.Source+" "+f.Msg, u)
		}
		if !found || sum.Problems() == 0 {
			t.Errorf("%s: no error naming %s: %+v\n%s", name, u, sum, dump(fs))
		}
	}
}

// TestVerifyDefaultClient: with no Client, verify's requests go through
// rsdump's client, whose User-Agent names rsdump.
func TestVerifyDefaultClient(t *testing.T) {
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
	sum, fs := run(t, verify.Options{}, srv.URL+"/"+layout.DumpName)
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
