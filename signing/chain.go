package signing

import (
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
)

// RootCAs are the trust anchors of PEM signatures that embed the signer's
// certificate (the OCM CLI's signatureEncodingPolicy: PEM): the embedded
// leaf must chain to one of them (intermediates may come from the
// signature), carry the codeSigning extended key usage and be valid now.
type RootCAs struct {
	certs []*x509.Certificate
}

// ParseRootCAs parses every PEM CERTIFICATE block of pemBytes as a root CA.
// Each must be a CA certificate (basicConstraints CA:TRUE): a leaf
// certificate is not a trust anchor (`ocm verify` refuses one too), and
// accepting it would let a signature vouch for itself.
func ParseRootCAs(pemBytes []byte) (*RootCAs, error) {
	r := &RootCAs{}
	rest := pemBytes
	for {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			return nil, fmt.Errorf("%w: root CA: PEM block %s is not a CERTIFICATE", errdef.ErrInvalidInput, errdef.Quote(block.Type))
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("%w: root CA: %v", errdef.ErrInvalidInput, err)
		}
		r.certs = append(r.certs, c)
	}
	return NewRootCAs(r.certs...)
}

// NewRootCAs makes root CAs of certs, which must all be CA certificates.
func NewRootCAs(certs ...*x509.Certificate) (*RootCAs, error) {
	if len(certs) == 0 {
		return nil, fmt.Errorf("%w: root CA: no PEM CERTIFICATE found", errdef.ErrInvalidInput)
	}
	for _, c := range certs {
		if c == nil {
			return nil, fmt.Errorf("%w: root CA: nil certificate", errdef.ErrInvalidInput)
		}
		if !isCA(c) {
			return nil, fmt.Errorf("%w: root CA: certificate %s is not a CA certificate (no basicConstraints CA:TRUE); give the root that issued it",
				errdef.ErrInvalidInput, errdef.Quote(c.Subject.String()))
		}
	}
	return &RootCAs{certs: slices.Clone(certs)}, nil
}

func isCA(c *x509.Certificate) bool { return c.BasicConstraintsValid && c.IsCA }

// pemSignature is a decoded application/x-pem-file signature value.
type pemSignature struct {
	sig   []byte
	certs []*x509.Certificate // the signer's leaf first, then intermediates
}

// parsePEMSignature reads the SIGNATURE block and the certificates after it.
func parsePEMSignature(value, algorithm string) (*pemSignature, error) {
	out := &pemSignature{}
	rest := []byte(value)
	for {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		switch block.Type {
		case "SIGNATURE":
			if out.sig != nil {
				return nil, fmt.Errorf("%s value has more than one SIGNATURE block", MediaTypePEM)
			}
			if a := block.Headers["Signature Algorithm"]; a != "" && a != algorithm {
				return nil, fmt.Errorf("PEM signature block is for %s, the signature claims %s", errdef.Quote(a), errdef.Quote(algorithm))
			}
			out.sig = block.Bytes
		case "CERTIFICATE":
			c, err := x509.ParseCertificate(block.Bytes)
			if err != nil {
				return nil, fmt.Errorf("%s value: embedded certificate: %v", MediaTypePEM, err)
			}
			out.certs = append(out.certs, c)
		}
	}
	if out.sig == nil {
		return nil, fmt.Errorf("%s value has no SIGNATURE block", MediaTypePEM)
	}
	return out, nil
}

// verifyChain checks that leaf (certs[0]) is a code-signing certificate
// valid at now whose chain, with the other certificates as intermediates,
// leads to one of roots. It returns a description of the signer.
func verifyChain(certs []*x509.Certificate, roots *RootCAs, now time.Time) (string, error) {
	leaf := certs[0]
	name := leaf.Subject.String()
	// Go accepts a leaf without extended key usages for any usage; OCM's
	// signing certificates must say codeSigning.
	if !slices.Contains(leaf.ExtKeyUsage, x509.ExtKeyUsageCodeSigning) {
		return "", fmt.Errorf("signing certificate %s is not for code signing (no extended key usage codeSigning)", errdef.Quote(name))
	}
	if leaf.KeyUsage != 0 && leaf.KeyUsage&x509.KeyUsageDigitalSignature == 0 {
		return "", fmt.Errorf("signing certificate %s: key usage does not include digitalSignature", errdef.Quote(name))
	}
	pool := x509.NewCertPool()
	for _, c := range roots.certs {
		pool.AddCert(c)
	}
	inter := x509.NewCertPool()
	for _, c := range certs[1:] {
		inter.AddCert(c)
	}
	chains, err := leaf.Verify(x509.VerifyOptions{
		Roots: pool, Intermediates: inter, CurrentTime: now,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageCodeSigning},
	})
	if err != nil {
		return "", fmt.Errorf("signing certificate %s is not trusted by the configured root CA: %s", errdef.Quote(name), oneLine(err.Error()))
	}
	for _, ch := range chains {
		// A chain of the leaf alone means the leaf is itself a configured
		// root: a signature must not be its own anchor.
		if len(ch) >= 2 {
			return fmt.Sprintf("certificate %s issued under root %s", errdef.Quote(name), errdef.Quote(ch[len(ch)-1].Subject.String())), nil
		}
	}
	return "", fmt.Errorf("signing certificate %s is itself a configured root CA; configure the CA that issued it", errdef.Quote(name))
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
