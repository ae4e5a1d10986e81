package signing

import (
	"bytes"
	"crypto"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
)

// ParsePublicKey parses a key file by its content:
//
//   - PEM "RSA PUBLIC KEY" (PKCS#1, what `ocm create rsakeypair` writes) or
//     "PUBLIC KEY" (PKIX): an *rsa.PublicKey;
//   - PEM "CERTIFICATE": the *x509.Certificate. For plain signatures it is
//     only a container for its key (validity and issuer are not checked:
//     trust comes from the operator configuring it). For a PEM signature
//     that embeds the signer's certificate it is the trust anchor, as in
//     `ocm verify`: it must be a CA certificate and the embedded chain must
//     lead to it. A file of several certificates that are all CA
//     certificates is a bundle of roots (*RootCAs);
//   - an ASCII-armored OpenPGP public key block: *OpenPGPKeys, for GPG
//     signatures.
//
// Only RSA keys are accepted in PEM form since the supported PEM signature
// algorithms are RSA ones; anything else is refused now rather than at
// verification time.
func ParsePublicKey(pemBytes []byte) (crypto.PublicKey, error) {
	if isArmoredOpenPGP(pemBytes) {
		return ParseOpenPGPKeys(pemBytes)
	}
	block, rest := pem.Decode(pemBytes)
	if block == nil {
		return nil, fmt.Errorf("%w: public key: no PEM block or armored OpenPGP key found", errdef.ErrInvalidInput)
	}
	var (
		key any
		err error
	)
	switch block.Type {
	case "RSA PUBLIC KEY":
		key, err = x509.ParsePKCS1PublicKey(block.Bytes)
	case "PUBLIC KEY":
		key, err = x509.ParsePKIXPublicKey(block.Bytes)
	case "CERTIFICATE":
		var cert *x509.Certificate
		if cert, err = x509.ParseCertificate(block.Bytes); err != nil {
			break
		}
		if _, err := rsaKey(cert.PublicKey); err != nil {
			return nil, fmt.Errorf("%w: CERTIFICATE holds a %T key; only RSA keys are supported", errdef.ErrInvalidInput, cert.PublicKey)
		}
		if isCA(cert) && bytes.Contains(rest, []byte("-----BEGIN CERTIFICATE-----")) {
			// A bundle of roots; a leaf followed by its chain stays a key
			// container, as it always was.
			return ParseRootCAs(pemBytes)
		}
		return cert, nil
	default:
		return nil, fmt.Errorf("%w: PEM block %s is not a public key (want RSA PUBLIC KEY, PUBLIC KEY, CERTIFICATE or an armored OpenPGP public key)",
			errdef.ErrInvalidInput, errdef.Quote(block.Type))
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", errdef.ErrInvalidInput, block.Type, err)
	}
	pub, ok := key.(*rsa.PublicKey)
	if !ok {
		return nil, fmt.Errorf("%w: %s holds a %T key; only RSA keys are supported", errdef.ErrInvalidInput, block.Type, key)
	}
	return pub, nil
}

// rsaKey accepts what a caller may reasonably hold for an RSA public key.
func rsaKey(key crypto.PublicKey) (*rsa.PublicKey, error) {
	switch k := key.(type) {
	case *rsa.PublicKey:
		if k == nil {
			break
		}
		return k, nil
	case rsa.PublicKey:
		return &k, nil
	case *x509.Certificate:
		if k == nil {
			break
		}
		return rsaKey(k.PublicKey)
	}
	return nil, fmt.Errorf("%w: key of type %T is not an RSA public key", errdef.ErrInvalidInput, key)
}

// Trust is what verifies one signature when it should be checked against
// both a key and root CAs; which of the two applies depends on the
// signature, never on which one happens to verify it:
//
//   - a PEM signature (application/x-pem-file) that embeds the signer's
//     certificate is checked against Roots when they are set (chain to a
//     root, codeSigning usage, validity now, signature by the leaf's key);
//   - every other signature (hex RSA, PEM without a certificate, GPG) is
//     checked with Key.
//
// Key is anything VerifySignature accepts as a key (nil when only root CAs
// are configured).
type Trust struct {
	Key   crypto.PublicKey
	Roots *RootCAs
}

// trust is a configured key, resolved into what each kind of signature needs.
type trust struct {
	rsa   *rsa.PublicKey    // plain RSA signatures
	cert  *x509.Certificate // the certificate rsa came from, if any
	roots *RootCAs          // anchors of PEM signatures with certificates
	pgp   *OpenPGPKeys      // GPG signatures
	// keyless: trusted root and identity of Sigstore signatures
	keyless *Keyless
	desc    string // what was configured, for errors
}

func trustOf(key crypto.PublicKey) (trust, error) {
	switch k := key.(type) {
	case *Trust:
		if k == nil {
			break
		}
		t := trust{desc: "no key"}
		if k.Key != nil {
			var err error
			if t, err = trustOf(k.Key); err != nil {
				return t, err
			}
		}
		if k.Roots != nil {
			if t.roots != nil && t.roots != k.Roots {
				return t, fmt.Errorf("%w: both the key and the root CAs are root CA certificates: configure the roots once", errdef.ErrInvalidInput)
			}
			t.roots = k.Roots
			if k.Key == nil {
				t.desc = "root CAs only"
			}
		}
		return t, nil
	case *RootCAs:
		if k == nil {
			break
		}
		return trust{roots: k, desc: "root CAs"}, nil
	case *OpenPGPKeys:
		if k == nil {
			break
		}
		return trust{pgp: k, desc: "an OpenPGP key"}, nil
	case *Keyless:
		if k == nil {
			break
		}
		return trust{keyless: k, desc: "a Sigstore trusted root and identity"}, nil
	case *x509.Certificate:
		if k == nil {
			break
		}
		pub, err := rsaKey(k.PublicKey)
		if err != nil {
			return trust{}, err
		}
		t := trust{rsa: pub, cert: k, desc: "a certificate"}
		if isCA(k) {
			t.roots = &RootCAs{certs: []*x509.Certificate{k}}
			t.desc = "a CA certificate"
		}
		return t, nil
	}
	pub, err := rsaKey(key)
	if err != nil {
		return trust{}, err
	}
	return trust{rsa: pub, desc: "an RSA public key"}, nil
}
