package sign

import (
	"bytes"
	"crypto"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	pgperrors "github.com/ProtonMail/go-crypto/openpgp/errors"
	"github.com/ProtonMail/go-crypto/openpgp/packet"
)

// Reason is why a signature was refused.
type Reason int

// The reasons a signature is refused.
const (
	Missing   Reason = iota + 1 // no signature where one must be
	Malformed                   // not an OpenPGP signature
	Untrusted                   // by a key the keyring does not hold
	WeakHash                    // made with SHA-1 or weaker
	Expired                     // past its lifetime, or its key's
	Bad                         // the document is not what was signed
)

// Error is a signature refused: the document it should authenticate, and
// why. Doc is set by the caller that knows the document's name.
type Error struct {
	Doc    string
	Reason Reason
	Msg    string
	At     time.Time // when an Expired signature or key expired; zero if unknown
}

func (e *Error) Error() string {
	if e.Doc == "" {
		return "not authenticated: " + e.Msg
	}
	return e.Doc + ": not authenticated: " + e.Msg
}

// For returns a copy of e naming the document doc, with the signature
// read from sig.
func (e *Error) For(doc string) *Error {
	c := *e
	c.Doc = doc
	return &c
}

// Result is a signature that verified.
type Result struct {
	Fingerprint string    // the signing key's primary fingerprint
	Created     time.Time // when the signature was made
	Expires     time.Time // when it expires; zero if never
}

// skew is how far in the future a signature's time may be, as a
// document's may (resourcesync.Horizon): clocks differ.
const skew = 5 * time.Minute

// Verify reads sig, a detached OpenPGP signature (armored or binary, at
// most MaxSignature bytes), then signed to its end, and reports whether
// one of the keyring's keys signed it. Refusals are *Error: a signature
// by no key of the keyring, made with SHA-1 or weaker, expired ("expired
// at T"), or not matching the bytes. signed is read once, so a caller can
// copy it aside as it is hashed (a spool of the document, parsed only
// after the signature verified).
func (k *Keyring) Verify(signed io.Reader, sig []byte) (Result, error) {
	return k.verify(signed, sig, time.Now())
}

func (k *Keyring) verify(signed io.Reader, sig []byte, now time.Time) (res Result, err error) {
	defer recoverTo(&err, "the signature")
	body, err := dearmor(sig)
	if err != nil {
		return Result{}, err
	}
	p, err := k.pick(body)
	if err != nil {
		return Result{}, err
	}
	if !acceptedHash(p.Hash) {
		return Result{}, &Error{Reason: WeakHash, Msg: fmt.Sprintf("its signature is made with %s, which is refused (SHA-256 or stronger is needed)", hashName(p.Hash))}
	}
	at := now
	if p.CreationTime.After(now) {
		if p.CreationTime.Sub(now) > skew {
			return Result{}, &Error{Reason: Expired, Msg: fmt.Sprintf("its signature was made at %s, in the future", stamp(p.CreationTime))}
		}
		at = p.CreationTime // a clock a little ahead: judge it when it signed
	}
	cfg := &packet.Config{Time: func() time.Time { return at }}
	s, signer, err := openpgp.VerifyDetachedSignature(k.list, signed, bytes.NewReader(body), cfg)
	if err != nil {
		return Result{}, verifyError(err, s, signer, at)
	}
	res = Result{Fingerprint: fingerprint(signer), Created: s.CreationTime}
	if s.SigLifetimeSecs != nil && *s.SigLifetimeSecs > 0 {
		res.Expires = s.CreationTime.Add(time.Duration(*s.SigLifetimeSecs) * time.Second)
	}
	return res, nil
}

// dearmor is the binary body of an armored signature, or sig itself.
func dearmor(sig []byte) ([]byte, error) {
	if len(sig) > MaxSignature {
		return nil, &Error{Reason: Malformed, Msg: fmt.Sprintf("its signature is larger than %d bytes", MaxSignature)}
	}
	if !isArmored(sig) {
		return sig, nil
	}
	block, err := armor.Decode(bytes.NewReader(sig))
	if err != nil {
		return nil, &Error{Reason: Malformed, Msg: "its signature is not an OpenPGP signature: " + err.Error()}
	}
	if block.Type != openpgp.SignatureType {
		return nil, &Error{Reason: Malformed, Msg: fmt.Sprintf("its signature is an armored %q block, not a signature", block.Type)}
	}
	b, err := io.ReadAll(io.LimitReader(block.Body, MaxSignature))
	if err != nil {
		return nil, &Error{Reason: Malformed, Msg: "its signature is not an OpenPGP signature: " + err.Error()}
	}
	return b, nil
}

// pick is the signature packet the library will verify: the first by a
// key of the keyring (openpgp.VerifyDetachedSignature takes the same).
func (k *Keyring) pick(body []byte) (*packet.Signature, error) {
	packets := packet.NewReader(bytes.NewReader(body))
	var by []string
	for {
		p, err := packets.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, &Error{Reason: Malformed, Msg: "its signature is not an OpenPGP signature: " + err.Error()}
		}
		s, ok := p.(*packet.Signature)
		if !ok {
			return nil, &Error{Reason: Malformed, Msg: fmt.Sprintf("its signature holds a %T, not only signatures", p)}
		}
		if s.SigType != packet.SigTypeBinary && s.SigType != packet.SigTypeText {
			return nil, &Error{Reason: Malformed, Msg: fmt.Sprintf("its signature is of type %#x, not of a document", s.SigType)}
		}
		if s.IssuerKeyId == nil {
			return nil, &Error{Reason: Malformed, Msg: "its signature names no key"}
		}
		if len(k.list.KeysByIdUsage(*s.IssuerKeyId, packet.KeyFlagSign)) > 0 {
			return s, nil
		}
		by = append(by, issuer(s))
	}
	if len(by) == 0 {
		return nil, &Error{Reason: Malformed, Msg: "its signature file holds no signature"}
	}
	return nil, &Error{Reason: Untrusted, Msg: fmt.Sprintf("it is signed by %s, not by a key trusted here (%s)", strings.Join(by, ", "), k)}
}

func issuer(s *packet.Signature) string {
	if len(s.IssuerFingerprint) > 0 {
		return fmt.Sprintf("key %X", s.IssuerFingerprint)
	}
	return fmt.Sprintf("key ID %016X", *s.IssuerKeyId)
}

// acceptedHash: SHA-256 and stronger (SHA-224 is SHA-256 cut short).
func acceptedHash(h crypto.Hash) bool {
	switch h {
	case crypto.SHA256, crypto.SHA384, crypto.SHA512, crypto.SHA3_256, crypto.SHA3_512:
		return true
	}
	return false
}

func hashName(h crypto.Hash) string {
	switch h {
	case crypto.SHA1:
		return "SHA-1"
	case crypto.MD5:
		return "MD5"
	case crypto.RIPEMD160:
		return "RIPEMD-160"
	case crypto.SHA224:
		return "SHA-224"
	}
	return h.String()
}

// verifyError says why the library refused a signature.
func verifyError(err error, s *packet.Signature, signer *openpgp.Entity, at time.Time) error {
	switch {
	case errors.Is(err, pgperrors.ErrSignatureExpired) && s != nil && s.SigExpired(at):
		exp := s.CreationTime.Add(time.Duration(*s.SigLifetimeSecs) * time.Second)
		return &Error{Reason: Expired, At: exp, Msg: fmt.Sprintf("its signature (made at %s) expired at %s", stamp(s.CreationTime), stamp(exp))}
	case errors.Is(err, pgperrors.ErrSignatureExpired), errors.Is(err, pgperrors.ErrKeyExpired):
		return &Error{Reason: Expired, Msg: "the key that signed it, " + label(signer) + ", is expired"}
	case errors.Is(err, pgperrors.ErrKeyRevoked):
		return &Error{Reason: Untrusted, Msg: "the key that signed it, " + label(signer) + ", is revoked"}
	case errors.Is(err, pgperrors.ErrUnknownIssuer):
		return &Error{Reason: Untrusted, Msg: "it is signed by no key trusted here"}
	}
	var se pgperrors.SignatureError
	if errors.As(err, &se) || strings.Contains(err.Error(), "verification failure") {
		return &Error{Reason: Bad, Msg: "its signature does not match it (a byte changed since it was signed): " + err.Error()}
	}
	return &Error{Reason: Bad, Msg: "its signature does not verify: " + err.Error()}
}

func label(e *openpgp.Entity) string {
	if e == nil {
		return "a key"
	}
	return keyLabel(e)
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// Loc is where the detached signature of the document at loc is: loc
// with Suffix added to its path (a URL's query stays after it).
func Loc(loc string) string {
	u, err := url.Parse(loc)
	if err != nil || u.Scheme == "" || u.RawQuery == "" && u.Fragment == "" {
		return loc + Suffix
	}
	u.Fragment, u.RawFragment = "", ""
	u.Path += Suffix
	if u.RawPath != "" {
		u.RawPath += Suffix
	}
	return u.String()
}
