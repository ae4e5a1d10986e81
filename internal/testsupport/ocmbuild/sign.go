package ocmbuild

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"encoding/hex"

	"sigs.k8s.io/yaml"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/ocm"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/signing"
)

// Sign signs the component's descriptor as `ocm sign` does
// (jsonNormalisation/v3, SHA-256, RSASSA-PKCS1-V1_5) under the signature name
// and stores the signed document as RawDescriptor. Local blobs stay as they are.
func (c *Component) Sign(name string, key *rsa.PrivateKey) error {
	raw, err := c.DescriptorYAML()
	if err != nil {
		return err
	}
	d, err := ocm.DecodeDescriptor(raw)
	if err != nil {
		return err
	}
	dg, err := signing.Digest(d, "jsonNormalisation/v3", "SHA-256")
	if err != nil {
		return err
	}
	sum, err := hex.DecodeString(dg)
	if err != nil {
		return err
	}
	sig, err := rsa.SignPKCS1v15(rand.Reader, key, crypto.SHA256, sum)
	if err != nil {
		return err
	}
	doc := map[string]any{}
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		return err
	}
	doc["signatures"] = []any{map[string]any{"name": name,
		"digest":    map[string]any{"hashAlgorithm": "SHA-256", "normalisationAlgorithm": "jsonNormalisation/v3", "value": dg},
		"signature": map[string]any{"algorithm": signing.RSAPKCS1v15, "mediaType": signing.MediaTypeRSA, "value": hex.EncodeToString(sig)}}}
	c.RawDescriptor, err = yaml.Marshal(doc)
	return err
}
