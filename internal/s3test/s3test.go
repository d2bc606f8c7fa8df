// Package s3test runs a real S3 server for tests: VersityGW serving a
// temporary directory on a free loopback port. Tests skip, saying so,
// only when the versitygw binary cannot be found (.ci/run installs it:
// go install github.com/versity/versitygw/cmd/versitygw@v1.8.0).
package s3test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/rsdump/rsdump/internal/httpc"
	"github.com/rsdump/rsdump/internal/s3x"
	rs3 "github.com/rsdump/rsdump/s3"
)

// Credentials of the test server's root account.
const (
	AccessKey = "rsdumptest"
	SecretKey = "rsdumptest-secret-key"
)

// startWait bounds the server's start.
const startWait = 15 * time.Second

// Server is a running VersityGW.
type Server struct {
	Endpoint string // http://127.0.0.1:PORT
	Dir      string // the directory it serves: one subdirectory per bucket
	Client   *s3x.Client
}

// Binary finds versitygw: $VERSITYGW, $PATH, then $GOBIN or
// $(go env GOPATH)/bin, where go install puts it. "" when missing.
func Binary() string {
	if p := os.Getenv("VERSITYGW"); p != "" {
		return p
	}
	if p, err := exec.LookPath("versitygw"); err == nil {
		return p
	}
	dirs := []string{os.Getenv("GOBIN")}
	if out, err := exec.Command("go", "env", "GOPATH").Output(); err == nil {
		for _, d := range filepath.SplitList(strings.TrimSpace(string(out))) {
			dirs = append(dirs, filepath.Join(d, "bin"))
		}
	}
	if home, err := os.UserHomeDir(); err == nil {
		dirs = append(dirs, filepath.Join(home, "go", "bin"))
	}
	for _, d := range dirs {
		if d == "" {
			continue
		}
		p := filepath.Join(d, "versitygw")
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
			return p
		}
	}
	return ""
}

// Start runs a server for the test and points the AWS environment at
// its credentials (so the test must not be parallel); Context gives its
// endpoint. The server stops when the test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	bin := Binary()
	if bin == "" {
		t.Skip("versitygw not found (go install github.com/versity/versitygw/cmd/versitygw@v1.8.0, or set VERSITYGW): S3 tests skipped")
	}
	isolateEnv(t)
	s := &Server{Dir: t.TempDir()}
	addr := freeAddr(t)
	s.Endpoint = "http://" + addr
	var log bytes.Buffer
	cmd := exec.Command(bin, "--port", addr, "posix", s.Dir)
	cmd.Env = append(os.Environ(), "ROOT_ACCESS_KEY="+AccessKey, "ROOT_SECRET_KEY="+SecretKey)
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", bin, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
	})
	if err := waitListening(addr, exited); err != nil {
		t.Fatalf("versitygw on %s: %v\n%s", addr, err, log.String())
	}
	c, err := s3x.New(context.Background(), rs3.Config{Endpoint: s.Endpoint}, httpc.Default())
	if err != nil {
		t.Fatal(err)
	}
	s.Client = c
	return s
}

// isolateEnv gives the SDK the server's credentials and nothing of the
// machine's AWS setup: no profile, no config files, no instance metadata.
func isolateEnv(t testing.TB) {
	dir := t.TempDir()
	for k, v := range map[string]string{
		"AWS_ACCESS_KEY_ID":           AccessKey,
		"AWS_SECRET_ACCESS_KEY":       SecretKey,
		"AWS_REGION":                  "us-east-1",
		"AWS_CONFIG_FILE":             filepath.Join(dir, "config"),
		"AWS_SHARED_CREDENTIALS_FILE": filepath.Join(dir, "credentials"),
		"AWS_EC2_METADATA_DISABLED":   "true",
	} {
		t.Setenv(k, v)
	}
	for _, k := range []string{"AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3"} {
		if old, ok := os.LookupEnv(k); ok {
			os.Unsetenv(k)
			t.Cleanup(func() { os.Setenv(k, old) })
		}
	}
}

func freeAddr(t testing.TB) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func waitListening(addr string, exited <-chan error) error {
	deadline := time.Now().Add(startWait)
	for time.Now().Before(deadline) {
		select {
		case err := <-exited:
			return fmt.Errorf("exited: %v", err)
		default:
		}
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("not listening after %s", startWait)
}

// Context returns ctx with the server as the S3 endpoint.
func (s *Server) Context(ctx context.Context) context.Context {
	return rs3.WithConfig(ctx, rs3.Config{Endpoint: s.Endpoint})
}

// Bucket creates a bucket and returns its name.
func (s *Server) Bucket(t testing.TB, name string) string {
	t.Helper()
	if _, err := s.Client.API.CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: &name}); err != nil {
		t.Fatalf("creating bucket %s: %v", name, err)
	}
	return name
}

// Put stores an object.
func (s *Server) Put(t testing.TB, bucket, key string, data []byte) {
	t.Helper()
	_, err := s.Client.API.PutObject(context.Background(), &s3.PutObjectInput{Bucket: &bucket, Key: &key, Body: bytes.NewReader(data)})
	if err != nil {
		t.Fatalf("putting s3://%s/%s: %v", bucket, key, err)
	}
}

// Get reads an object.
func (s *Server) Get(t testing.TB, bucket, key string) []byte {
	t.Helper()
	out, err := s.Client.API.GetObject(context.Background(), &s3.GetObjectInput{Bucket: &bucket, Key: &key})
	if err != nil {
		t.Fatalf("getting s3://%s/%s: %v", bucket, key, err)
	}
	defer out.Body.Close()
	var b bytes.Buffer
	if _, err := b.ReadFrom(out.Body); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}
