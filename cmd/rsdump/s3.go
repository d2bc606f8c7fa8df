package main

import (
	"context"
	"io"
	"slices"

	"github.com/spf13/pflag"

	"github.com/rsdump/rsdump/s3"
)

// s3Flag registers --s3-endpoint on a command that reads or writes
// s3://BUCKET/KEY, and returns a function giving the command's context
// the setting once flags are parsed, and the grant of S3 when one of the
// locations the user gave is an s3:// URL (s3.Grant): only then are
// s3:// requests signed.
func s3Flag(fs *pflag.FlagSet) func(ctx context.Context, given ...string) (context.Context, error) {
	var endpoint string
	fs.StringVar(&endpoint, "s3-endpoint", "", "reach s3://BUCKET/KEY at the S3-compatible server `URL`, path-style (default: AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, the AWS profile, else AWS); credentials and region come from the AWS environment and config files")
	return func(ctx context.Context, given ...string) (context.Context, error) {
		ctx = s3.Grant(ctx, given...)
		if endpoint == "" {
			return ctx, nil
		}
		if err := s3.CheckEndpoint(endpoint); err != nil {
			return ctx, usagef("--s3-endpoint: %v", err)
		}
		return s3.WithConfig(ctx, s3.Config{Endpoint: endpoint}), nil
	}
}

// readerFlags registers the flags of the commands that read a Source's
// documents (get, sync, unpack, verify): --s3-endpoint, --trust and
// --http1.1 (into http1, for the command's transfer.Options). What it
// returns parses args, then grants S3 access to the arguments and to the
// flag values urls point at, and puts the trusted keys into ctx.
func readerFlags(fs *pflag.FlagSet, http1 *bool) func(ctx context.Context, args []string, help string, stdout io.Writer, urls ...*string) (context.Context, error) {
	withS3 := s3Flag(fs)
	withTrust := trustFlag(fs)
	fs.BoolVar(http1, "http1.1", false, "speak HTTP/1.1 only: no HTTP/2 over TLS, no h2c with rsdump serve (for a server or proxy whose HTTP/2 misbehaves)")
	return func(ctx context.Context, args []string, help string, stdout io.Writer, urls ...*string) (context.Context, error) {
		if err := parse(fs, args, help, stdout); err != nil {
			return ctx, err
		}
		given := slices.Clone(fs.Args())
		for _, u := range urls {
			given = append(given, *u)
		}
		ctx, err := withS3(ctx, given...)
		if err != nil {
			return ctx, err
		}
		return withTrust(ctx)
	}
}

// checkOutput refuses, as a usage error, an output URL that is not
// s3://BUCKET[/PREFIX]: pack writes to a directory or a bucket.
func checkOutput(out string) error {
	if !s3.IsURL(out) {
		return usagef("-o %q: pack writes to a directory or s3://BUCKET/PREFIX", out)
	}
	if _, _, err := s3.Split(out); err != nil {
		return usagef("-o: %v", err)
	}
	return nil
}
