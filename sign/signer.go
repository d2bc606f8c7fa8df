package sign

import (
	"bytes"
	"crypto"
	_ "crypto/sha256" // the signatures' hash
	"encoding"
	"errors"
	"fmt"
	"hash"
	"io"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	"github.com/ProtonMail/go-crypto/openpgp/packet"
)

// hashAlgo is the hash of every signature rsdump makes.
const hashAlgo = crypto.SHA256

// ErrPassphrase is a secret key that is protected and was given no
// passphrase, or a wrong one.
var ErrPassphrase = errors.New("the secret key is protected by a passphrase")

// A Signer makes detached signatures with one secret key. It is safe for
// concurrent use.
type Signer struct {
	entity *openpgp.Entity
	key    openpgp.Key   // the signing key: the primary key or a subkey
	valid  time.Duration // the signatures' lifetime; 0: no expiry
	now    func() time.Time
}

// LoadSigner reads the secret key in the file at path (armored or binary
// OpenPGP) and decrypts it with passphrase when it is protected. valid,
// when positive, is the lifetime of every signature it makes (rounded up
// to a second).
func LoadSigner(path string, passphrase []byte, valid time.Duration) (*Signer, error) {
	b, err := readKeyFile(path)
	if err != nil {
		return nil, err
	}
	s, err := ParseSigner(b, passphrase, valid)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

// ParseSigner is LoadSigner of the key file's bytes.
func ParseSigner(b, passphrase []byte, valid time.Duration) (*Signer, error) {
	if valid < 0 {
		return nil, fmt.Errorf("a signature lifetime of %v: not positive", valid)
	}
	list, err := readEntities(b)
	if err != nil {
		return nil, err
	}
	for _, e := range list {
		if e.PrivateKey == nil {
			continue
		}
		if err := decrypt(e, passphrase); err != nil {
			return nil, err
		}
		key, ok := e.SigningKey(time.Now())
		if !ok || key.PrivateKey == nil || key.PrivateKey.Dummy() {
			continue
		}
		return &Signer{entity: e, key: key, valid: valid, now: time.Now}, nil
	}
	return nil, errors.New("no secret key that may sign (a public key file, or its signing key is expired, revoked or kept on a card)")
}

func decrypt(e *openpgp.Entity, passphrase []byte) error {
	if !e.PrivateKey.Encrypted && !anySubkeyEncrypted(e) {
		return nil
	}
	if len(passphrase) == 0 {
		return fmt.Errorf("%w: give one (--sign-passphrase-file FILE, or RSDUMP_SIGN_PASSPHRASE)", ErrPassphrase)
	}
	if err := e.DecryptPrivateKeys(passphrase); err != nil {
		return fmt.Errorf("%w, and the one given does not open it (%v)", ErrPassphrase, err)
	}
	return nil
}

func anySubkeyEncrypted(e *openpgp.Entity) bool {
	for _, s := range e.Subkeys {
		if s.PrivateKey != nil && s.PrivateKey.Encrypted {
			return true
		}
	}
	return false
}

// Fingerprint is the signing key's primary fingerprint.
func (s *Signer) Fingerprint() string { return fingerprint(s.entity) }

// Public is the keyring of the signer's public key: what a Destination
// trusts.
func (s *Signer) Public() *Keyring { return &Keyring{list: openpgp.EntityList{s.entity}} }

// Sign reads r to its end and returns an armored detached signature of it.
func (s *Signer) Sign(r io.Reader) ([]byte, error) {
	w, err := s.NewWriter()
	if err != nil {
		return nil, err
	}
	if _, err := io.Copy(w, r); err != nil {
		return nil, err
	}
	return w.Signature()
}

// A Writer hashes what is written to it for a signature, so that a
// document is signed in the pass that writes it.
type Writer struct {
	s   *Signer
	sig *packet.Signature
	h   hash.Hash
}

// NewWriter starts a signature of what will be written to the Writer.
func (s *Signer) NewWriter() (*Writer, error) {
	sig := s.packet()
	h, err := sig.PrepareSign(config())
	if err != nil {
		return nil, err
	}
	return &Writer{s: s, sig: sig, h: h}, nil
}

func (w *Writer) Write(p []byte) (int, error) { return w.h.Write(p) }

// Signature ends the signature and returns it, armored.
func (w *Writer) Signature() ([]byte, error) {
	return w.s.finish(w.sig, w.h)
}

// SignSHA256 signs the message whose SHA-256 state, after every byte of
// it, h holds (a crypto/sha256 hash: its state is copied, h is left as it
// was): a package is signed from the hash pack computes while it writes
// it, without reading it again. It fails with ErrNotCloneable when the
// key's signatures cannot start from a plain hash state (a version 6 key,
// whose signatures hash a salt first); the caller then signs the bytes.
func (s *Signer) SignSHA256(h hash.Hash) ([]byte, error) {
	sig := s.packet()
	if sig.Version != 4 {
		return nil, ErrNotCloneable
	}
	m, ok := h.(encoding.BinaryMarshaler)
	if !ok || h.Size() != crypto.SHA256.Size() {
		return nil, ErrNotCloneable
	}
	state, err := m.MarshalBinary()
	if err != nil {
		return nil, err
	}
	c := crypto.SHA256.New()
	if err := c.(encoding.BinaryUnmarshaler).UnmarshalBinary(state); err != nil {
		return nil, ErrNotCloneable
	}
	return s.finish(sig, c)
}

// ErrNotCloneable is a hash state a signature cannot start from.
var ErrNotCloneable = errors.New("the signature cannot be made from the hash state")

// packet is a new binary signature by the signing key, as the library's
// own detached signatures are made (openpgp.DetachSign), with the lifetime
// set.
func (s *Signer) packet() *packet.Signature {
	pk := s.key.PublicKey
	life := uint32(0)
	if s.valid > 0 {
		life = uint32((s.valid + time.Second - 1) / time.Second)
	}
	return &packet.Signature{
		Version:           pk.Version,
		SigType:           packet.SigTypeBinary,
		PubKeyAlgo:        pk.PubKeyAlgo,
		Hash:              hashAlgo,
		CreationTime:      s.now(),
		IssuerKeyId:       &pk.KeyId,
		IssuerKeyVersion:  uint8(pk.Version),
		IssuerFingerprint: pk.Fingerprint,
		SigLifetimeSecs:   &life,
	}
}

// finish signs h, which has hashed the message, and armors the signature.
func (s *Signer) finish(sig *packet.Signature, h hash.Hash) ([]byte, error) {
	if err := sig.Sign(h, s.key.PrivateKey, config()); err != nil {
		return nil, fmt.Errorf("signing with %s: %w", s.Fingerprint(), err)
	}
	var b bytes.Buffer
	w, err := armor.Encode(&b, openpgp.SignatureType, nil)
	if err != nil {
		return nil, err
	}
	if err := sig.Serialize(w); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	b.WriteByte('\n')
	return b.Bytes(), nil
}
