package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/pflag"

	"github.com/rsdump/rsdump/finding"
	"github.com/rsdump/rsdump/pack"
	"github.com/rsdump/rsdump/resourcesync"
	"github.com/rsdump/rsdump/sign"
)

// passphraseEnv holds the passphrase of a --sign or --key secret key; a
// flag value would show in the process list.
const passphraseEnv = "RSDUMP_SIGN_PASSPHRASE"

// trustFlag registers --trust on a command that reads a Source, and
// returns a function giving the command's context the keys once flags
// are parsed (resourcesync.WithTrust): every document is then read only
// once its signature by one of them verified.
func trustFlag(fs *pflag.FlagSet) func(ctx context.Context) (context.Context, error) {
	var files []string
	fs.StringArrayVar(&files, "trust", nil, "require every document to be signed (DOC.asc) by the OpenPGP public key in `KEYFILE` (armored or binary; repeatable: any of the keys), and every byte to match a hash a signed document gives")
	return func(ctx context.Context) (context.Context, error) {
		if len(files) == 0 {
			return ctx, nil
		}
		k, err := sign.LoadKeyring(absArgs(files)...)
		if err != nil {
			return ctx, usagef("--trust: %v", err)
		}
		return resourcesync.WithTrust(ctx, k), nil
	}
}

// signerFlags are the flags that load a secret key: pack's --sign,
// --sign-passphrase-file and --sign-valid, or sign's --key and --valid.
type signerFlags struct {
	key, passFile string
	valid         time.Duration
	keyFlag       string
}

func (s *signerFlags) register(fs *pflag.FlagSet, key, valid, passFile, what string) {
	s.keyFlag = key
	pathVarP(fs, &s.key, key, "", "", what)
	pathVarP(fs, &s.passFile, passFile, "", "", "read the passphrase of the secret key from the first line of `FILE` (or set "+passphraseEnv+"; never a flag value)")
	fs.DurationVar(&s.valid, valid, 0, "signatures expire after `DURATION` (e.g. 168h): a Destination refuses them after that, as Debian's Valid-Until (default: never)")
}

// load reads the secret key, or nil when none was given.
func (s *signerFlags) load() (*sign.Signer, error) {
	if s.key == "" {
		if s.passFile != "" || s.valid != 0 {
			return nil, usagef("--%s-passphrase-file and the validity need --%s KEYFILE", s.keyFlag, s.keyFlag)
		}
		return nil, nil
	}
	if s.valid < 0 {
		return nil, usagef("the signatures' validity must be positive")
	}
	pass := []byte(os.Getenv(passphraseEnv))
	if s.passFile != "" {
		b, err := os.ReadFile(s.passFile)
		if err != nil {
			return nil, err
		}
		pass, _, _ = bytes.Cut(b, []byte("\n"))
		pass = bytes.TrimSuffix(pass, []byte("\r"))
	}
	return sign.LoadSigner(s.key, pass, s.valid)
}

const signHelp = `Usage: rsdump sign DIR --key KEYFILE [--valid DURATION] [flags]

Signs the ResourceSync documents and Metalinks in DIR that another tool
wrote (resync-build, a pack run without --sign), as pack --sign does:
every document, told by its content (a sitemap <urlset> or <sitemapindex>,
whatever its name; DIR/.well-known/resourcesync too), gets an armored
detached OpenPGP signature NAME.asc beside it, and every file of a .meta4
whose bytes are beside it a <signature mediatype="application/pgp-signature">
(RFC 5854 4.2.13), the Metalink being written again. gpg --verify
NAME.asc NAME accepts every signature. KEYFILE is an OpenPGP secret key,
armored or binary (gpg --export-secret-keys); its passphrase comes from
--passphrase-file or the environment variable RSDUMP_SIGN_PASSPHRASE.

Sign again after every change: a Destination with --trust refuses a
document whose signature is missing, expired, by another key, or made
before the document changed.

Exit status: 0 success, 1 failure, 2 usage error.

Examples:
  rsdump sign ./pub --key source.sec.asc --valid 168h
  rsdump sign ./pub --key source.sec.gpg --passphrase-file ./passphrase --json
`

func runSign(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var s signerFlags
	var asJSON bool
	fs := newFlags("sign")
	s.register(fs, "key", "valid", "passphrase-file", "sign with the OpenPGP secret key in `KEYFILE` (required)")
	fs.BoolVar(&asJSON, "json", false, "print what was signed as JSON on stdout")
	if err := parse(fs, args, signHelp, stdout); err != nil {
		return err
	}
	args = absArgs(fs.Args())
	switch {
	case len(args) != 1:
		return usagef("sign takes one directory, got %d arguments", len(args))
	case s.key == "":
		return usagef("sign needs --key KEYFILE")
	}
	signer, err := s.load()
	if err != nil {
		return err
	}
	res, err := pack.SignDir(ctx, args[0], signer)
	if err != nil {
		return err
	}
	if asJSON {
		return json.NewEncoder(stdout).Encode(res)
	}
	fmt.Fprintf(stdout, "signed %s and %s in %s with %s\n", finding.Plural(len(res.Documents), "document"),
		finding.Plural(len(res.Metalinks), "Metalink"), args[0], signer.Fingerprint())
	return nil
}
