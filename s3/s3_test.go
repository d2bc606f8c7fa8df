package s3

import (
	"context"
	"errors"
	"testing"
)

func TestSplit(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ in, bucket, key string }{
		{"s3://dumps/rs/resourcedump.xml", "dumps", "rs/resourcedump.xml"},
		{"s3://dumps", "dumps", ""},
		{"s3://my.bucket-1/a/", "my.bucket-1", "a/"},
		{"s3://b1b/dir/a%20b%25.zip", "b1b", "dir/a b%.zip"},
	} {
		b, k, err := Split(c.in)
		if err != nil || b != c.bucket || k != c.key {
			t.Errorf("Split(%q) = %q, %q, %v; want %q, %q", c.in, b, k, err, c.bucket, c.key)
		}
	}
	for _, in := range []string{"http://x/y", "s3://", "s3://ab/x", "s3://Upper/x", "s3://-dash/x", "s3://dash-/x", "s3://a_b/x", "s3://b1b/k?q", "s3://b1b/k#f",
		"s3://b1b/a/../k", "s3://b1b/./k", "s3://b1b/a/%2E%2E/k", "s3://b1b/.."} {
		if _, _, err := Split(in); !errors.Is(err, ErrBadURL) {
			t.Errorf("Split(%q): %v, want ErrBadURL", in, err)
		}
	}
	if Join("b1b", "k/x") != "s3://b1b/k/x" || Join("b1b", "a b%.zip") != "s3://b1b/a%20b%25.zip" {
		t.Error(Join("b1b", "k/x"), Join("b1b", "a b%.zip"))
	}
	if b, k, _ := Split(Join("b1b", "d/a b?#%.zip")); b != "b1b" || k != "d/a b?#%.zip" {
		t.Errorf("Split(Join) = %q, %q", b, k)
	}
}

func TestCheckEndpoint(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{"http://127.0.0.1:7070", "https://127.0.0.24/"} {
		if err := CheckEndpoint(ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "127.0.0.1:7070", "ftp://h", "http://u:p@h", "http://h/path", "http://h/?q=1"} {
		if err := CheckEndpoint(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestConfigInContext(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	if ConfigFrom(ctx) != (Config{}) {
		t.Fatal("a bare context carries a Config")
	}
	c := Config{Endpoint: "http://127.0.0.1:1"}
	if ConfigFrom(WithConfig(ctx, c)) != c {
		t.Fatal("WithConfig lost the Config")
	}
}

// Only a location the user gave that is an s3:// URL grants S3.
func TestGrant(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	if Granted(ctx) || Granted(Grant(ctx)) || Granted(Grant(ctx, "http://127.0.0.1/rs/", "/tmp/s3:/x")) {
		t.Fatal("granted without an s3:// location")
	}
	if !Granted(Grant(ctx, "http://127.0.0.1/rs/", "s3://b1b/rs/")) {
		t.Fatal("an s3:// location given grants nothing")
	}
}
