package signing_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/signing"
)

// Every accepted PEM form of the same key verifies a signature made with it.
func TestParsePublicKeyForms(t *testing.T) {
	key := privateKey(t)
	pkix1, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "signer"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
	}
	cert, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	d := sign(t, testDoc, key, sig{name: "s", algorithm: signing.RSAPKCS1v15, mediaType: signing.MediaTypeRSA, hash: signing.SHA256})

	for _, tc := range []struct {
		name string
		pem  []byte
	}{
		{"PKCS#1 RSA PUBLIC KEY", pem.EncodeToMemory(&pem.Block{Type: "RSA PUBLIC KEY", Bytes: x509.MarshalPKCS1PublicKey(&key.PublicKey)})},
		{"PKIX PUBLIC KEY", pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pkix1})},
		{"CERTIFICATE", pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert})},
		{"CERTIFICATE with text before it", append([]byte("subject=CN=signer\n"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert})...)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pub, err := signing.ParsePublicKey(tc.pem)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := signing.VerifySignature(d, "s", pub); err != nil {
				t.Fatal(err)
			}
		})
	}
	t.Run("parsed certificate as key", func(t *testing.T) {
		c, err := x509.ParseCertificate(cert)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := signing.VerifySignature(d, "s", c); err != nil {
			t.Fatal(err)
		}
	})
}

func TestParsePublicKeyErrors(t *testing.T) {
	ec, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ecDER, err := x509.MarshalPKIXPublicKey(&ec.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, pem, contains string
	}{
		{"not PEM", "ssh-rsa AAAA", "no PEM block"},
		{"private key", string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(privateKey(t))})), "not a public key"},
		{"EC key", string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: ecDER})), "only RSA"},
		{"garbage DER", string(pem.EncodeToMemory(&pem.Block{Type: "RSA PUBLIC KEY", Bytes: []byte("junk")})), "RSA PUBLIC KEY"},
		{"garbage certificate", string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte("junk")})), "CERTIFICATE"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := signing.ParsePublicKey([]byte(tc.pem))
			if !errors.Is(err, errdef.ErrInvalidInput) || !strings.Contains(err.Error(), tc.contains) {
				t.Fatalf("err = %v, want ErrInvalidInput mentioning %q", err, tc.contains)
			}
		})
	}
}
