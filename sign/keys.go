// Package sign is the authenticity of a Source: OpenPGP keys, the detached
// signatures a Source writes beside its documents (DOC.asc) and inside its
// Metalinks (RFC 5854 4.2.13), and their check against the keys a
// Destination trusts. It owns every OpenPGP operation rsdump makes, through
// github.com/ProtonMail/go-crypto (the maintained fork of
// x/crypto/openpgp); nothing else in rsdump touches a key or a signature
// packet.
//
// A Signer signs with one secret key (armored or binary, decrypted with
// its passphrase), SHA-256, and a lifetime when asked (freeze protection,
// as Debian's Valid-Until). A Keyring holds the public keys a Destination
// trusts and verifies a detached signature against them, refusing what is
// missing, bad, expired, by a key it does not hold, or made with SHA-1 or
// weaker; every refusal is an *Error naming the document and why.
package sign

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	"github.com/ProtonMail/go-crypto/openpgp/packet"
)

// Suffix is what a document's detached signature adds to its name.
const Suffix = ".asc"

// MediaType is the media type of an armored OpenPGP signature (RFC 3156),
// of an .asc file and of a Metalink <signature>.
const MediaType = "application/pgp-signature"

// MaxKeyFile bounds a key file read; MaxSignature a signature.
const (
	MaxKeyFile   = 1 << 20
	MaxSignature = 64 << 10
)

// A Keyring is the public keys a Destination trusts: a signature by any
// of them is accepted.
type Keyring struct {
	list openpgp.EntityList
}

// LoadKeyring reads the public keys in the files at paths (armored or
// binary OpenPGP; a secret key file gives its public part). Each file must
// hold at least one key.
func LoadKeyring(paths ...string) (*Keyring, error) {
	k := &Keyring{}
	for _, p := range paths {
		b, err := readKeyFile(p)
		if err != nil {
			return nil, err
		}
		more, err := ParseKeyring(b)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		k.add(more)
	}
	if len(k.list) == 0 {
		return nil, errors.New("no key file given")
	}
	return k, nil
}

// ParseKeyring reads the public keys in b, armored or binary.
func ParseKeyring(b []byte) (k *Keyring, err error) {
	list, err := readEntities(b)
	if err != nil {
		return nil, err
	}
	return &Keyring{list: list}, nil
}

// Merge is a keyring of the keys of both, each once.
func (k *Keyring) Merge(o *Keyring) *Keyring {
	m := &Keyring{list: slices.Clone(k.list)}
	m.add(o)
	return m
}

func (k *Keyring) add(o *Keyring) {
	for _, e := range o.list {
		if !k.has(fingerprint(e)) {
			k.list = append(k.list, e)
		}
	}
}

func (k *Keyring) has(fp string) bool {
	return slices.ContainsFunc(k.list, func(e *openpgp.Entity) bool { return fingerprint(e) == fp })
}

// Fingerprints are the primary keys' fingerprints, upper-case hex, sorted.
func (k *Keyring) Fingerprints() []string {
	var fps []string
	for _, e := range k.list {
		fps = append(fps, fingerprint(e))
	}
	slices.Sort(fps)
	return fps
}

// Same reports whether k and o hold the same keys.
func (k *Keyring) Same(o *Keyring) bool {
	return o != nil && slices.Equal(k.Fingerprints(), o.Fingerprints())
}

// Armor is the keyring's public keys, armored: what a Destination pins.
func (k *Keyring) Armor() ([]byte, error) {
	var b bytes.Buffer
	w, err := armor.Encode(&b, openpgp.PublicKeyType, nil)
	if err != nil {
		return nil, err
	}
	for _, e := range k.list {
		if err := e.Serialize(w); err != nil {
			return nil, err
		}
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// String names the keys by fingerprint.
func (k *Keyring) String() string { return strings.Join(k.Fingerprints(), ", ") }

func fingerprint(e *openpgp.Entity) string {
	return fmt.Sprintf("%X", e.PrimaryKey.Fingerprint)
}

// readKeyFile reads a key file of at most MaxKeyFile bytes.
func readKeyFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxKeyFile+1))
	if err == nil && len(b) > MaxKeyFile {
		err = fmt.Errorf("%s: larger than %d bytes: not a key file", path, MaxKeyFile)
	}
	return b, err
}

// readEntities parses armored or binary keys. A malformed one is an
// error, never a panic: the parser is guarded.
func readEntities(b []byte) (list openpgp.EntityList, err error) {
	defer recoverTo(&err, "the key")
	body := io.Reader(bytes.NewReader(b))
	if isArmored(b) {
		block, err := armor.Decode(bytes.NewReader(b))
		if err != nil {
			return nil, fmt.Errorf("not an OpenPGP key: %w", err)
		}
		if block.Type != openpgp.PublicKeyType && block.Type != openpgp.PrivateKeyType {
			return nil, fmt.Errorf("not an OpenPGP key: an armored %q block", block.Type)
		}
		body = block.Body
	}
	list, err = openpgp.ReadKeyRing(body)
	if err != nil {
		return nil, fmt.Errorf("not an OpenPGP key: %w", err)
	}
	if len(list) == 0 {
		return nil, errors.New("not an OpenPGP key: no key in it")
	}
	return list, nil
}

func isArmored(b []byte) bool {
	return bytes.HasPrefix(bytes.TrimLeft(b, " \t\r\n"), []byte("-----BEGIN PGP"))
}

// recoverTo turns a panic of the OpenPGP parser into an error: input
// from a Source must never bring rsdump down.
func recoverTo(err *error, what string) {
	if r := recover(); r != nil {
		*err = fmt.Errorf("%s is malformed (%v)", what, r)
	}
}

// keyLabel names an entity for a message: its fingerprint and first
// identity.
func keyLabel(e *openpgp.Entity) string {
	fp := fingerprint(e)
	if id := e.PrimaryIdentity(); id != nil {
		return fp + " (" + id.Name + ")"
	}
	return fp
}

// config is the OpenPGP configuration of every signature rsdump makes:
// SHA-256, and no salt notation (gpg writes none either).
func config() *packet.Config {
	no := false
	return &packet.Config{DefaultHash: hashAlgo, NonDeterministicSignaturesViaNotation: &no}
}
