package signing_test

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/ocm"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/signing"
)

type issued struct {
	cert *x509.Certificate
	key  *rsa.PrivateKey
}

var serial int64

func certify(t testing.TB, tmpl *x509.Certificate, parent *issued, key *rsa.PrivateKey) *issued {
	t.Helper()
	serial++
	tmpl.SerialNumber = big.NewInt(serial)
	if tmpl.NotBefore.IsZero() {
		tmpl.NotBefore, tmpl.NotAfter = time.Now().Add(-time.Hour), time.Now().Add(time.Hour)
	}
	signer, parentCert := key, tmpl
	if parent != nil {
		signer, parentCert = parent.key, parent.cert
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parentCert, &key.PublicKey, signer)
	if err != nil {
		t.Fatal(err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &issued{cert: c, key: key}
}

func newKey(t testing.TB) *rsa.PrivateKey {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func newCA(t testing.TB, name string) *issued {
	t.Helper()
	return certify(t, &x509.Certificate{
		Subject: pkix.Name{CommonName: name}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	}, nil, newKey(t))
}

func pemCert(c *x509.Certificate) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})
}

func mustHex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// signedWithChain signs testDoc with key as the OCM CLI's PEM encoding
// does: a SIGNATURE block, then the given certificates (leaf first).
func signedWithChain(t testing.TB, key *rsa.PrivateKey, chain ...*x509.Certificate) *ocm.Descriptor {
	t.Helper()
	d := sign(t, testDoc, key, sig{name: "pem", algorithm: signing.RSAPSS, mediaType: signing.MediaTypePEM, hash: signing.SHA256,
		norm: signing.JSONNormalisationV4Alpha1, pem: true})
	v := d.Signatures[0].Signature.Value
	for _, c := range chain {
		v += string(pemCert(c))
	}
	return editSignatureValue(t, d, "pem", v)
}

// PKI rules for PEM signatures that carry the signer's certificate.
func TestPEMChain(t *testing.T) {
	root := newCA(t, "test root")
	otherRoot := newCA(t, "other root")
	inter := certify(t, &x509.Certificate{
		Subject: pkix.Name{CommonName: "test intermediate"}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign,
	}, root, newKey(t))
	leafKey := privateKey(t)
	leaf := func(parent *issued, mod func(*x509.Certificate)) *x509.Certificate {
		tmpl := &x509.Certificate{
			Subject: pkix.Name{CommonName: "signer"}, KeyUsage: x509.KeyUsageDigitalSignature,
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageCodeSigning}, BasicConstraintsValid: true,
		}
		if mod != nil {
			mod(tmpl)
		}
		return certify(t, tmpl, parent, leafKey).cert
	}
	good := leaf(root, nil)
	roots, err := signing.NewRootCAs(root.cert)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		d        *ocm.Descriptor
		key      any
		contains string // "" verifies
	}{
		{"leaf under the root", signedWithChain(t, leafKey, good), roots, ""},
		{"root certificate as the key", signedWithChain(t, leafKey, good), root.cert, ""},
		{"via an embedded intermediate", signedWithChain(t, leafKey, leaf(inter, nil), inter.cert), roots, ""},
		{"intermediate not embedded", signedWithChain(t, leafKey, leaf(inter, nil)), roots, "not trusted"},
		{"chain to another root", signedWithChain(t, leafKey, good), mustRoots(t, otherRoot.cert), "not trusted"},
		{"expired leaf", signedWithChain(t, leafKey, leaf(root, func(c *x509.Certificate) {
			c.NotBefore, c.NotAfter = time.Now().Add(-48*time.Hour), time.Now().Add(-24*time.Hour)
		})), roots, "expired"},
		{"leaf not yet valid", signedWithChain(t, leafKey, leaf(root, func(c *x509.Certificate) {
			c.NotBefore, c.NotAfter = time.Now().Add(24*time.Hour), time.Now().Add(48*time.Hour)
		})), roots, "not trusted"},
		{"leaf without extended key usage", signedWithChain(t, leafKey, leaf(root, func(c *x509.Certificate) { c.ExtKeyUsage = nil })), roots, "codeSigning"},
		{"leaf for servers only", signedWithChain(t, leafKey, leaf(root, func(c *x509.Certificate) {
			c.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		})), roots, "codeSigning"},
		{"leaf without digitalSignature", signedWithChain(t, leafKey, leaf(root, func(c *x509.Certificate) {
			c.KeyUsage = x509.KeyUsageKeyEncipherment
		})), roots, "digitalSignature"},
		{"signature by another key than the leaf's", signedWithChain(t, root.key, good), roots, "does not verify"},
		{"leaf as the configured key", signedWithChain(t, leafKey, good), good, "not a CA certificate"},
		{"bare key pins the signer", signedWithChain(t, leafKey, good), &leafKey.PublicKey, ""},
		{"bare key of someone else", signedWithChain(t, leafKey, good), &root.key.PublicKey, "does not verify"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := signing.VerifySignature(tc.d, "pem", tc.key)
			if tc.contains == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, errdef.ErrSignature) || !strings.Contains(err.Error(), tc.contains) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("err = %v, want a one-line signature failure mentioning %q", err, tc.contains)
			}
		})
	}

	// A CA that signs with its own certificate is not its own anchor.
	selfSigner := certify(t, &x509.Certificate{
		Subject: pkix.Name{CommonName: "self"}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageCodeSigning},
	}, nil, newKey(t))
	_, err = signing.VerifySignature(signedWithChain(t, selfSigner.key, selfSigner.cert), "pem", mustRoots(t, selfSigner.cert))
	if !errors.Is(err, errdef.ErrSignature) || !strings.Contains(err.Error(), "itself a configured root") {
		t.Errorf("self-anchored signature: %v", err)
	}
}

func mustRoots(t testing.TB, certs ...*x509.Certificate) *signing.RootCAs {
	t.Helper()
	r, err := signing.NewRootCAs(certs...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestParseRootCAsErrors(t *testing.T) {
	for name, in := range map[string]string{
		"empty":      "",
		"public key": "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n",
		"garbage":    "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n",
		"leaf":       string(pemCert(certify(t, &x509.Certificate{Subject: pkix.Name{CommonName: "leaf"}}, nil, privateKey(t)).cert)),
	} {
		if _, err := signing.ParseRootCAs([]byte(in)); !errors.Is(err, errdef.ErrInvalidInput) {
			t.Errorf("%s: %v", name, err)
		}
	}
}
