package signing_test

import (
	"bytes"
	"crypto"
	"crypto/rsa"
	"crypto/x509"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	"github.com/ProtonMail/go-crypto/openpgp/packet"
	"sigs.k8s.io/yaml"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/ocm"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/signing"
)

// The descriptors and public keys written by the OCM CLI v0.13.0 (see
// testdata/ocm-cli-v2/signatures/README.md).
var v2Dir = filepath.Join("..", "testdata", "ocm-cli-v2", "signatures")

// v2Descriptor reads what `ocm get cv -o yaml` printed: a list of one.
func v2Descriptor(t testing.TB, file string) *ocm.Descriptor {
	t.Helper()
	return decode(t, v2DescriptorBytes(t, file))
}

func v2KeyFile(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(v2Dir, "keys", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func v2Key(t testing.TB, name string) crypto.PublicKey {
	t.Helper()
	k, err := signing.ParsePublicKey(v2KeyFile(t, name))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return k
}

var v2Descriptors = []string{
	"ctf__helm-dir_1.0.0.yaml", "ctf__helm-tgz_6.14.1.yaml", "ctf__helm-oci-ref_1.0.0.yaml", "ctf__kustomize_1.0.0.yaml",
	"ctf__manifests_1.0.0.yaml", "ctf__bundle_1.0.0.yaml", "ctf__helm-dir_1.1.0-unsigned.yaml",
	"fx-oci__helm-dir_1.0.0.yaml", "fx-localblob__helm-oci-ref_1.0.0.yaml",
}

var v2Keys = []string{"rsa.pub.pem", "rsa.pkcs1.pub.pem", "ca.crt", "leaf.crt", "gpg.pub.asc", "wrong.pub.pem"}

// v2Verifies is the README's table "Which key verifies which signature":
// signature name -> the key files that verify it. Nothing else verifies.
var v2Verifies = map[string][]string{
	"fx-pss":   {"rsa.pub.pem", "rsa.pkcs1.pub.pem"},
	"fx-pkcs1": {"rsa.pub.pem", "rsa.pkcs1.pub.pem"},
	"fx-pem":   {"ca.crt"},
	"fx-gpg":   {"gpg.pub.asc"},
}

// Every signature of every descriptor against every key: exactly the
// README's pairs verify, each over the digest recomputed here.
func TestOCMCLIv2SignatureMatrix(t *testing.T) {
	want := map[string][]string{ // descriptor -> its signatures
		"ctf__helm-dir_1.0.0.yaml":              {"fx-pss", "fx-pkcs1", "fx-pem", "fx-gpg"},
		"ctf__helm-tgz_6.14.1.yaml":             {"fx-pss"},
		"ctf__helm-oci-ref_1.0.0.yaml":          {"fx-pem"},
		"ctf__kustomize_1.0.0.yaml":             {"fx-pkcs1"},
		"ctf__manifests_1.0.0.yaml":             {"fx-gpg"},
		"ctf__bundle_1.0.0.yaml":                {"fx-pss"},
		"ctf__helm-dir_1.1.0-unsigned.yaml":     nil,
		"fx-oci__helm-dir_1.0.0.yaml":           {"fx-pss", "fx-pkcs1", "fx-pem", "fx-gpg"},
		"fx-localblob__helm-oci-ref_1.0.0.yaml": {"fx-pem"},
	}
	verified := 0
	for _, file := range v2Descriptors {
		d := v2Descriptor(t, file)
		var names []string
		for _, s := range d.Signatures {
			names = append(names, s.Name)
		}
		if !slices.Equal(names, want[file]) {
			t.Fatalf("%s: signatures %v, want %v", file, names, want[file])
		}
		for _, s := range d.Signatures {
			// The digest the CLI signed is the one computed here.
			if s.Digest.NormalisationAlgorithm != signing.JSONNormalisationV4Alpha1 || s.Digest.HashAlgorithm != signing.SHA256 {
				t.Fatalf("%s %s: digest %+v", file, s.Name, s.Digest)
			}
			dg, err := signing.Digest(d, s.Digest.NormalisationAlgorithm, s.Digest.HashAlgorithm)
			if err != nil || dg != s.Digest.Value {
				t.Fatalf("%s %s: computed digest %s (%v), the CLI signed %s", file, s.Name, dg, err, s.Digest.Value)
			}
			for _, k := range v2Keys {
				r, err := signing.VerifySignature(d, s.Name, v2Key(t, k))
				ok := slices.Contains(v2Verifies[s.Name], k)
				switch {
				case ok && err != nil:
					t.Errorf("%s %s with %s: %v", file, s.Name, k, err)
				case ok:
					verified++
					if r.Digest != s.Digest.Value || r.Algorithm != s.Signature.Algorithm {
						t.Errorf("%s %s: result %+v", file, s.Name, r)
					}
				case err == nil:
					t.Errorf("%s %s verified with %s, which must not verify it", file, s.Name, k)
				case !errors.Is(err, errdef.ErrSignature) || errors.Is(err, errdef.ErrDigestMismatch):
					t.Errorf("%s %s with %s: err = %v, want a signature failure that is no digest mismatch", file, s.Name, k, err)
				case strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), d.Name+":"+d.Version) || !strings.Contains(err.Error(), `"`+s.Name+`"`):
					t.Errorf("error is not one line naming component, version and signature: %q", err)
				}
			}
		}
	}
	if verified != 21 {
		t.Errorf("%d verifications succeeded, want 21", verified)
	}
}

// What each signature says about its signer.
func TestOCMCLIv2Signers(t *testing.T) {
	d := v2Descriptor(t, "ctf__helm-dir_1.0.0.yaml")
	r, err := signing.VerifySignature(d, "fx-pem", v2Key(t, "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(r.Signer, "ocm-fixtures-signer") || !strings.Contains(r.Signer, "OCM fixtures root CA") {
		t.Errorf("signer %q", r.Signer)
	}
	r, err = signing.VerifySignature(d, "fx-gpg", v2Key(t, "gpg.pub.asc"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(r.Signer, "1C4BBE5A7006AA9BC8017381B6307081EFA3801B") {
		t.Errorf("signer %q", r.Signer)
	}
}

// Key files are told apart by content.
func TestOCMCLIv2KeyDetection(t *testing.T) {
	for file, want := range map[string]string{
		"rsa.pub.pem": "*rsa.PublicKey", "rsa.pkcs1.pub.pem": "*rsa.PublicKey", "wrong.pub.pem": "*rsa.PublicKey",
		"ca.crt": "*x509.Certificate", "leaf.crt": "*x509.Certificate", "gpg.pub.asc": "*signing.OpenPGPKeys",
	} {
		if got := typeName(v2Key(t, file)); got != want {
			t.Errorf("%s parsed as %s, want %s", file, got, want)
		}
	}
	bundle := append(v2KeyFile(t, "ca.crt"), pemCert(newCA(t, "other root").cert)...)
	if got := typeName(mustParse(t, bundle)); got != "*signing.RootCAs" {
		t.Errorf("a bundle of CA certificates parsed as %s", got)
	}
	// A leaf followed by its CA stays a key container, as before.
	if got := typeName(mustParse(t, append(v2KeyFile(t, "leaf.crt"), v2KeyFile(t, "ca.crt")...))); got != "*x509.Certificate" {
		t.Errorf("leaf+CA parsed as %s", got)
	}
	if _, err := signing.ParsePublicKey([]byte("-----BEGIN PGP PRIVATE KEY BLOCK-----\n\nxx\n-----END PGP PRIVATE KEY BLOCK-----\n")); !errors.Is(err, errdef.ErrInvalidInput) {
		t.Errorf("private OpenPGP block: %v", err)
	}
}

func mustParse(t *testing.T, b []byte) crypto.PublicKey {
	t.Helper()
	k, err := signing.ParsePublicKey(b)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func typeName(v any) string {
	switch v.(type) {
	case *rsa.PublicKey:
		return "*rsa.PublicKey"
	case *x509.Certificate:
		return "*x509.Certificate"
	case *signing.OpenPGPKeys:
		return "*signing.OpenPGPKeys"
	case *signing.RootCAs:
		return "*signing.RootCAs"
	}
	return "other"
}

// The leaf certificate is no trust anchor, however it is configured (`ocm
// verify` refuses it: certificate signed by unknown authority).
func TestOCMCLIv2LeafIsNoAnchor(t *testing.T) {
	d := v2Descriptor(t, "ctf__helm-dir_1.0.0.yaml")
	if _, err := signing.ParseRootCAs(v2KeyFile(t, "leaf.crt")); !errors.Is(err, errdef.ErrInvalidInput) || !strings.Contains(err.Error(), "not a CA certificate") {
		t.Errorf("leaf.crt as root CA file: %v", err)
	}
	leaf := v2Key(t, "leaf.crt").(*x509.Certificate)
	if _, err := signing.NewRootCAs(leaf); err == nil {
		t.Error("NewRootCAs accepted a leaf")
	}
	_, err := signing.VerifySignature(d, "fx-pem", leaf)
	if !errors.Is(err, errdef.ErrSignature) || !strings.Contains(err.Error(), "not a CA certificate") {
		t.Errorf("leaf.crt as key of fx-pem: %v", err)
	}
	// Only root CAs: a hex signature carries no certificate to chain.
	roots, err := signing.ParseRootCAs(v2KeyFile(t, "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := signing.VerifySignature(d, "fx-pss", roots); !errors.Is(err, errdef.ErrSignature) || !strings.Contains(err.Error(), "carries no certificate") {
		t.Errorf("fx-pss with root CAs only: %v", err)
	}
	// A key and root CAs for one name: each signature uses what applies.
	both := &signing.Trust{Key: v2Key(t, "rsa.pub.pem"), Roots: roots}
	for _, n := range []string{"fx-pss", "fx-pkcs1", "fx-pem"} {
		if _, err := signing.VerifySignature(d, n, both); err != nil {
			t.Errorf("%s with key and roots: %v", n, err)
		}
	}
	if _, err := signing.VerifySignature(d, "fx-gpg", both); err == nil || !strings.Contains(err.Error(), "OpenPGP") {
		t.Errorf("fx-gpg with RSA key and roots: %v", err)
	}
}

// One changed label value: every signature fails on the recomputed digest.
func TestOCMCLIv2Tampered(t *testing.T) {
	d := v2Descriptor(t, "ctf__helm-dir_1.0.0.yaml")
	bad := edit(t, d, "value: helm-dir\n", "value: helm-dix\n")
	for n, k := range map[string]string{"fx-pss": "rsa.pub.pem", "fx-pkcs1": "rsa.pub.pem", "fx-pem": "ca.crt", "fx-gpg": "gpg.pub.asc"} {
		if _, err := signing.VerifySignature(d, n, v2Key(t, k)); err != nil {
			t.Fatalf("%s untouched: %v", n, err)
		}
		_, err := signing.VerifySignature(bad, n, v2Key(t, k))
		if !errors.Is(err, errdef.ErrSignature) || !errors.Is(err, errdef.ErrDigestMismatch) {
			t.Errorf("%s tampered: %v", n, err)
		}
	}
	// The digest claimed in the signature changed too: the signature itself fails.
	s := d.Signatures[0].Digest.Value
	both := edit(t, edit(t, d, "value: helm-dir\n", "value: helm-dix\n"), "value: "+s+"\n  name: fx-pss", "value: "+mustDigest(t, bad)+"\n  name: fx-pss")
	if _, err := signing.VerifySignature(both, "fx-pss", v2Key(t, "rsa.pub.pem")); !errors.Is(err, errdef.ErrSignature) || errors.Is(err, errdef.ErrDigestMismatch) {
		t.Errorf("tampered with a matching digest: %v", err)
	}
}

func mustDigest(t *testing.T, d *ocm.Descriptor) string {
	t.Helper()
	dg, err := signing.Digest(d, signing.JSONNormalisationV4Alpha1, signing.SHA256)
	if err != nil {
		t.Fatal(err)
	}
	return dg
}

// GPG signatures made here: another key does not verify the CLI's signature,
// the CLI's key does not verify ours, and ours verifies with its own key.
func TestGPGOtherKey(t *testing.T) {
	ent, err := openpgp.NewEntity("Someone Else", "", "else@example.com", &packet.Config{RSABits: 2048})
	if err != nil {
		t.Fatal(err)
	}
	var pub bytes.Buffer
	w, err := armor.Encode(&pub, openpgp.PublicKeyType, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := ent.Serialize(w); err != nil {
		t.Fatal(err)
	}
	w.Close()
	other := mustParse(t, pub.Bytes())

	d := v2Descriptor(t, "ctf__manifests_1.0.0.yaml")
	if _, err := signing.VerifySignature(d, "fx-gpg", other); !errors.Is(err, errdef.ErrSignature) || !strings.Contains(err.Error(), "not made by the configured OpenPGP key") {
		t.Errorf("fx-gpg with another OpenPGP key: %v", err)
	}

	// Sign the same digest with the generated key, the way the OCM CLI does.
	digest := d.Signatures[0].Digest.Value
	raw := mustHex(t, digest)
	var sig bytes.Buffer
	if err := openpgp.ArmoredDetachSign(&sig, ent, bytes.NewReader(raw), nil); err != nil {
		t.Fatal(err)
	}
	ours := editSignatureValue(t, d, "fx-gpg", sig.String())
	if _, err := signing.VerifySignature(ours, "fx-gpg", other); err != nil {
		t.Errorf("our GPG signature with our key: %v", err)
	}
	if _, err := signing.VerifySignature(ours, "fx-gpg", v2Key(t, "gpg.pub.asc")); !errors.Is(err, errdef.ErrSignature) {
		t.Errorf("our GPG signature with the fixture key: %v", err)
	}
	// A text-mode signature is not what OCM writes.
	sig.Reset()
	if err := openpgp.ArmoredDetachSignText(&sig, ent, bytes.NewReader(raw), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := signing.VerifySignature(editSignatureValue(t, d, "fx-gpg", sig.String()), "fx-gpg", other); err == nil || !strings.Contains(err.Error(), "binary") {
		t.Errorf("text signature: %v", err)
	}
	// An RSA key for a GPG signature, and the other way round.
	if _, err := signing.VerifySignature(d, "fx-gpg", v2Key(t, "rsa.pub.pem")); err == nil || !strings.Contains(err.Error(), "OpenPGP public key") {
		t.Errorf("fx-gpg with an RSA key: %v", err)
	}
	if _, err := signing.VerifySignature(v2Descriptor(t, "ctf__bundle_1.0.0.yaml"), "fx-pss", other); err == nil || !strings.Contains(err.Error(), "needs an RSA public key") {
		t.Errorf("fx-pss with an OpenPGP key: %v", err)
	}
}

// editSignatureValue replaces the value of signature name in d.
func editSignatureValue(t testing.TB, d *ocm.Descriptor, name, value string) *ocm.Descriptor {
	t.Helper()
	var m map[string]any
	if err := yaml.Unmarshal(d.Raw, &m); err != nil {
		t.Fatal(err)
	}
	for _, s := range m["signatures"].([]any) {
		s := s.(map[string]any)
		if s["name"] == name {
			s["signature"].(map[string]any)["value"] = value
		}
	}
	b, err := yaml.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return decode(t, b)
}

// Refusals name what is supported.
func TestOCMCLIv2Refusals(t *testing.T) {
	d := v2Descriptor(t, "ctf__kustomize_1.0.0.yaml")
	for _, tc := range []struct{ from, to, contains string }{
		{"algorithm: RSASSA-PKCS1-V1_5", "algorithm: ECDSA-P256", "not supported"},
		{"algorithm: RSASSA-PKCS1-V1_5", "algorithm: sigstore", "older OCM sigstore format"},
		{"mediaType: application/vnd.ocm.signature.rsa\n", "mediaType: application/vnd.dev.sigstore.bundle.v0.3+json\n", `media type "application/vnd.dev.sigstore.bundle.v0.3+json" is not supported for RSASSA-PKCS1-V1_5`},
		{"algorithm: RSASSA-PKCS1-V1_5", "algorithm: GPG", "media type"},
		{"mediaType: application/vnd.ocm.signature.rsa\n", "mediaType: application/json\n", "media type"},
	} {
		_, err := signing.VerifySignature(edit(t, d, tc.from, tc.to), "fx-pkcs1", v2Key(t, "rsa.pub.pem"))
		if !errors.Is(err, errdef.ErrSignature) || !strings.Contains(err.Error(), tc.contains) {
			t.Errorf("%s: %v", tc.to, err)
			continue
		}
		for _, w := range []string{signing.RSAPSS, signing.RSAPKCS1v15, signing.GPG, signing.MediaTypeRSAPSS, signing.MediaTypeRSA, signing.MediaTypePEM, signing.MediaTypeGPG, "kustomize:1.0.0", `"fx-pkcs1"`} {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %q does not name %s", tc.to, err, w)
			}
		}
	}
}
