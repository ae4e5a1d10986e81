package signing_test

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"log"
	"strings"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/ocm"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/signing"
)

func Example() {
	const unsigned = `meta:
  schemaVersion: v2
component:
  name: example.com/demo/app
  version: 1.0.0
  provider: acme.org
  labels:
  - {name: channel, value: stable, signing: true}
  - {name: owner, value: team-a}
  repositoryContexts: []
  sources: []
  componentReferences: []
  resources:
  - name: manifests
    version: 1.0.0
    type: directoryTree
    relation: local
    access: {type: localBlob, localReference: "sha256:cfad8f0c7d2ab2aaad44a6e4d60bbee6bd2cb68392e3bcc7c15fece5a7262e05", mediaType: application/x-tgz}
    digest: {hashAlgorithm: SHA-256, normalisationAlgorithm: genericBlobDigest/v1, value: cfad8f0c7d2ab2aaad44a6e4d60bbee6bd2cb68392e3bcc7c15fece5a7262e05}
`
	d, err := ocm.DecodeDescriptor([]byte(unsigned))
	if err != nil {
		log.Fatal(err)
	}
	// What a signature covers: access, repository contexts and non-signing
	// labels are left out, so transport may change them.
	norm, _ := signing.Normalise(d, signing.JSONNormalisationV3)
	fmt.Println(string(norm))

	// Sign as `ocm sign componentversions` does (normally done by the OCM CLI).
	key, _ := rsa.GenerateKey(rand.Reader, 2048)
	digest, _ := signing.Digest(d, signing.JSONNormalisationV3, signing.SHA256)
	hashed, _ := hex.DecodeString(digest)
	sig, _ := rsa.SignPKCS1v15(rand.Reader, key, crypto.SHA256, hashed)
	signed := unsigned + fmt.Sprintf(`signatures:
- name: release
  digest: {hashAlgorithm: SHA-256, normalisationAlgorithm: jsonNormalisation/v3, value: %s}
  signature: {algorithm: RSASSA-PKCS1-V1_5, mediaType: application/vnd.ocm.signature.rsa, value: %x}
`, digest, sig)

	// Verify with the public key as the operator configured it (PEM).
	pub, err := signing.ParsePublicKey(pem.EncodeToMemory(&pem.Block{Type: "RSA PUBLIC KEY", Bytes: x509.MarshalPKCS1PublicKey(&key.PublicKey)}))
	if err != nil {
		log.Fatal(err)
	}
	d, _ = ocm.DecodeDescriptor([]byte(signed))
	res, err := signing.VerifySignature(d, "release", pub)
	fmt.Println(res.Signature, res.Algorithm, err)

	// A changed non-signing label still verifies; a changed signing label does not.
	d, _ = ocm.DecodeDescriptor([]byte(strings.Replace(signed, "value: team-a", "value: team-b", 1)))
	_, err = signing.VerifySignature(d, "release", pub)
	fmt.Println("owner changed:", err)
	d, _ = ocm.DecodeDescriptor([]byte(strings.Replace(signed, "value: stable", "value: beta", 1)))
	_, err = signing.VerifySignature(d, "release", pub)
	fmt.Println("channel changed:", errors.Is(err, errdef.ErrSignature), errors.Is(err, errdef.ErrDigestMismatch))

	// Output:
	// {"component":{"componentReferences":[],"labels":[{"name":"channel","signing":true,"value":"stable"}],"name":"example.com/demo/app","provider":{"name":"acme.org"},"resources":[{"digest":{"hashAlgorithm":"SHA-256","normalisationAlgorithm":"genericBlobDigest/v1","value":"cfad8f0c7d2ab2aaad44a6e4d60bbee6bd2cb68392e3bcc7c15fece5a7262e05"},"name":"manifests","relation":"local","type":"directoryTree","version":"1.0.0"}],"sources":[],"version":"1.0.0"}}
	// release RSASSA-PKCS1-V1_5 <nil>
	// owner changed: <nil>
	// channel changed: true true
}
