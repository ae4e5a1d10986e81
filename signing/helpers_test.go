package signing_test

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"encoding/hex"
	"encoding/pem"
	"os"
	"strings"
	"sync"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/ocm/ctf"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/fixtures"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/ocm"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/signing"
)

const (
	signedApp    = "example.com/fixtures/signed-app"
	signedBundle = "example.com/fixtures/signed-bundle"
	appDigest    = "ea6446ec76a4ec515218baa45a59e1f19e5aef39bafa7023ce361d0726b872e9"
	bundleDigest = "1e8665295602ac5c01cc63377b30d04e0fed7a69da335aa070ea3c2c5ab4d531"
)

// openRepo opens a fixture repository (CTF or component archive).
func openRepo(t testing.TB, elem ...string) ocm.Repository {
	t.Helper()
	r, err := ctf.Open(fixtures.Path(t, elem...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func lookup(t testing.TB, r ocm.Repository, component, version string) *ocm.Descriptor {
	t.Helper()
	d, err := signing.RepositoryLookup(r)(context.Background(), component, version)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func readFixture(t testing.TB, elem ...string) []byte {
	t.Helper()
	b, err := os.ReadFile(fixtures.Path(t, elem...))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func fixtureKey(t testing.TB, elem ...string) crypto.PublicKey {
	t.Helper()
	k, err := signing.ParsePublicKey(readFixture(t, elem...))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func decode(t testing.TB, raw []byte) *ocm.Descriptor {
	t.Helper()
	d, err := ocm.DecodeDescriptor(raw)
	if err != nil {
		t.Fatalf("decode: %v\n%s", err, raw)
	}
	return d
}

// edit replaces old by new exactly once in d's raw bytes and decodes again,
// the way a tampered descriptor would arrive.
func edit(t testing.TB, d *ocm.Descriptor, old, new string) *ocm.Descriptor {
	t.Helper()
	raw := string(d.Raw)
	if n := strings.Count(raw, old); n != 1 {
		t.Fatalf("%q occurs %d times in the descriptor, want 1", old, n)
	}
	return decode(t, []byte(strings.Replace(raw, old, new, 1)))
}

var (
	keyOnce sync.Once
	testKey *rsa.PrivateKey
)

// privateKey returns one generated key for the whole test binary.
func privateKey(t testing.TB) *rsa.PrivateKey {
	t.Helper()
	keyOnce.Do(func() {
		k, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			panic(err)
		}
		testKey = k
	})
	return testKey
}

// sig describes how the test signer signs.
type sig struct {
	name, algorithm, mediaType, hash string
	norm                             string // default jsonNormalisation/v3
	pem                              bool   // wrap the value in a PEM SIGNATURE block
}

// sign adds a signature to the YAML document doc (without signatures), the
// way the OCM CLI does: digest of the normalised descriptor, then an RSA
// signature over the digest bytes as a precomputed hash.
func sign(t testing.TB, doc string, key *rsa.PrivateKey, s sig) *ocm.Descriptor {
	t.Helper()
	if s.norm == "" {
		s.norm = signing.JSONNormalisationV3
	}
	d := decode(t, []byte(doc))
	digest, err := signing.Digest(d, s.norm, s.hash)
	if err != nil {
		t.Fatal(err)
	}
	hashed, _ := hex.DecodeString(digest)
	h := crypto.SHA256
	if s.hash == signing.SHA512 {
		h = crypto.SHA512
	}
	var value []byte
	if s.algorithm == signing.RSAPSS {
		value, err = rsa.SignPSS(rand.Reader, key, h, hashed, nil)
	} else {
		value, err = rsa.SignPKCS1v15(rand.Reader, key, h, hashed)
	}
	if err != nil {
		t.Fatal(err)
	}
	v := hex.EncodeToString(value)
	if s.pem {
		v = string(pem.EncodeToMemory(&pem.Block{
			Type: "SIGNATURE", Headers: map[string]string{"Signature Algorithm": s.algorithm}, Bytes: value,
		}))
	}
	var m map[string]any
	if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
		t.Fatal(err)
	}
	m["signatures"] = []any{map[string]any{
		"name":      s.name,
		"digest":    map[string]any{"hashAlgorithm": s.hash, "normalisationAlgorithm": s.norm, "value": digest},
		"signature": map[string]any{"algorithm": s.algorithm, "mediaType": s.mediaType, "value": v},
	}}
	out, err := yaml.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return decode(t, out)
}

// testDoc is a small v2 descriptor used for signatures made in the tests.
const testDoc = `meta:
  schemaVersion: v2
component:
  name: example.com/test/app
  version: 1.2.3
  provider: acme.org
  creationTime: "2024-05-06T07:08:09Z"
  labels:
  - name: channel
    value: stable
    signing: true
  - name: note
    value: volatile
  repositoryContexts: []
  sources: []
  componentReferences: []
  resources:
  - name: chart
    version: 1.2.3
    type: helmChart
    relation: local
    access:
      type: localBlob
      localReference: sha256:4e44272a9227f95b21baff6ccbf125a2f1ed7fb1763df0334f736438a4a9b527
      mediaType: application/vnd.cncf.helm.chart.content.v1.tar+gzip
    digest:
      hashAlgorithm: SHA-256
      normalisationAlgorithm: genericBlobDigest/v1
      value: 4e44272a9227f95b21baff6ccbf125a2f1ed7fb1763df0334f736438a4a9b527
`
