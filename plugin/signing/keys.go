package signing

import (
	"crypto"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/plugin/errdef"
)

// ParsePublicKey parses the first PEM block of pemBytes as an RSA public key:
// "RSA PUBLIC KEY" (PKCS#1, what `ocm create rsakeypair` writes), "PUBLIC KEY"
// (PKIX) or "CERTIFICATE".
//
// A certificate is only a container for its key here: its validity period,
// issuer and chain are not checked, because trust comes from the operator
// configuring this key, not from a PKI. Only RSA keys are accepted since the
// supported signature algorithms are RSA ones; anything else is refused now
// rather than at verification time.
func ParsePublicKey(pemBytes []byte) (crypto.PublicKey, error) {
	block, _ := pem.Decode(pemBytes)
	if block == nil {
		return nil, fmt.Errorf("%w: public key: no PEM block found", errdef.ErrInvalidInput)
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
		if cert, err = x509.ParseCertificate(block.Bytes); err == nil {
			key = cert.PublicKey
		}
	default:
		return nil, fmt.Errorf("%w: PEM block %q is not a public key (want RSA PUBLIC KEY, PUBLIC KEY or CERTIFICATE)",
			errdef.ErrInvalidInput, block.Type)
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
