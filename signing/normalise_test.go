package signing_test

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/ocm"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/signing"
)

// The normalised bytes must be exactly what the OCM CLI produced.
func TestNormaliseConformance(t *testing.T) {
	for _, tc := range []struct {
		name   string
		desc   func(t *testing.T) *ocm.Descriptor
		want   []string // path of the expected bytes under the fixture directory
		digest string   // the signature digest the CLI wrote, if any
	}{
		{
			name:   "signed-app",
			desc:   func(t *testing.T) *ocm.Descriptor { return lookup(t, openRepo(t, "ctf-signed"), signedApp, "1.0.0") },
			want:   []string{"normalized", "ctf-signed__example.com_fixtures_signed-app_1.0.0.json"},
			digest: appDigest,
		},
		{
			name:   "signed-bundle (reference with digest and non-signing label)",
			desc:   func(t *testing.T) *ocm.Descriptor { return lookup(t, openRepo(t, "ctf-signed"), signedBundle, "1.0.0") },
			want:   []string{"normalized", "ctf-signed__example.com_fixtures_signed-bundle_1.0.0.json"},
			digest: bundleDigest,
		},
		{
			name: "podinfo-app-plainchart",
			desc: func(t *testing.T) *ocm.Descriptor {
				return lookup(t, openRepo(t, "ctf"), "example.com/fixtures/podinfo-app-plainchart", "1.0.0")
			},
			want: []string{"normalized", "ctf__example.com_fixtures_podinfo-app-plainchart_1.0.0.json"},
		},
		{
			name: "ocmcli 0.27.0 conformance (extraIdentity, sources, ociImage)",
			desc: func(t *testing.T) *ocm.Descriptor {
				return decode(t, readFixture(t, "upstream-testdata", "normalisation-v3-conformance-ocmcli-0.27.0", "input.yaml"))
			},
			want: []string{"upstream-testdata", "normalisation-v3-conformance-ocmcli-0.27.0", "expected.json"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := tc.desc(t)
			want := strings.TrimSuffix(string(readFixture(t, tc.want...)), "\n")
			for _, alg := range []string{signing.JSONNormalisationV3, signing.JSONNormalisationV4Alpha1} {
				got, err := signing.Normalise(d, alg)
				if err != nil {
					t.Fatal(err)
				}
				if string(got) != want {
					t.Fatalf("%s:\ngot  %s\nwant %s", alg, got, want)
				}
			}
			sum := sha256.Sum256([]byte(want))
			digest, err := signing.Digest(d, signing.JSONNormalisationV3, signing.SHA256)
			if err != nil {
				t.Fatal(err)
			}
			if digest != hex.EncodeToString(sum[:]) {
				t.Fatalf("Digest = %s, want %x", digest, sum)
			}
			if tc.digest != "" && digest != tc.digest {
				t.Fatalf("Digest = %s, the CLI signed %s", digest, tc.digest)
			}
		})
	}
}

// A third CLI-written digest: the sigstore-signed upstream descriptor.
func TestDigestMatchesSigstoreFixture(t *testing.T) {
	d := decode(t, readFixture(t, "upstream-testdata", "sigstore-signed-jsonNormalisationV3-descriptor.yaml"))
	got, err := signing.Digest(d, signing.JSONNormalisationV3, "SHA-256")
	if err != nil {
		t.Fatal(err)
	}
	if want := d.Signatures[0].Digest.Value; got != want {
		t.Fatalf("digest %s, want %s", got, want)
	}
	sha512, err := signing.Digest(d, signing.JSONNormalisationV3, signing.SHA512)
	if err != nil || len(sha512) != 128 {
		t.Fatalf("SHA-512 digest %q, %v", sha512, err)
	}
}

// The same component in both schemas, with every rule of §6 exercised.
const rulesV2 = `meta:
  schemaVersion: v2
component:
  name: example.com/test/rules
  version: 2.0.0
  creationTime: "2024-01-02T03:04:05.6+02:00"
  provider: '{"name":"acme.org","labels":[{"name":"team","value":"x"},{"name":"tier","value":1.50,"signing":"true","version":"v1"}]}'
  labels:
  - {name: a, value: {b: [1, 2.0, "<&>"]}, signing: true}
  - {name: b, value: drop}
  repositoryContexts: [{type: OCIRegistry, baseUrl: ghcr.io}]
  sources:
  - name: src
    version: 2.0.0
    type: git
    access: {type: gitHub, repoUrl: github.com/x/y}
    labels: [{name: l, value: v, signing: false}]
  componentReferences:
  - name: dep
    componentName: example.com/test/dep
    version: 1.0.0
    extraIdentity: {}
    labels: [{name: note, value: kept, signing: false}]
  resources:
  - name: none
    version: 2.0.0
    type: blob
    relation: local
    access: {type: none}
    digest: {hashAlgorithm: SHA-256, normalisationAlgorithm: genericBlobDigest/v1, value: "00"}
  - name: img
    version: 1.0.0
    type: ociImage
    relation: external
    extraIdentity: {arch: amd64}
    srcRefs: [{identitySelector: {name: src}}]
    referenceHints: [{type: oci, reference: x/img:1.0.0}]
    x-extension: kept
    access: {type: ociArtifact, imageReference: ghcr.io/x/img:1.0.0}
`

const rulesV3 = `apiVersion: ocm.software/v3alpha1
kind: ComponentVersion
metadata:
  name: example.com/test/rules
  version: 2.0.0
  creationTime: "2024-01-02T03:04:05.6+02:00"
  provider:
    name: acme.org
    labels: [{name: team, value: x}, {name: tier, value: 1.50, signing: "true", version: v1}]
  labels:
  - {name: a, value: {b: [1, 2.0, "<&>"]}, signing: true}
  - {name: b, value: drop}
repositoryContexts: [{type: OCIRegistry, baseUrl: ghcr.io}]
spec:
  sources:
  - name: src
    version: 2.0.0
    type: git
    access: {type: gitHub, repoUrl: github.com/x/y}
    labels: [{name: l, value: v, signing: false}]
  references:
  - name: dep
    componentName: example.com/test/dep
    version: 1.0.0
    extraIdentity: {}
    labels: [{name: note, value: kept, signing: false}]
  resources:
  - name: none
    version: 2.0.0
    type: blob
    relation: local
    access: {type: none}
    digest: {hashAlgorithm: SHA-256, normalisationAlgorithm: genericBlobDigest/v1, value: "00"}
  - name: img
    version: 1.0.0
    type: ociImage
    relation: external
    extraIdentity: {arch: amd64}
    srcRefs: [{identitySelector: {name: src}}]
    referenceHints: [{type: oci, reference: x/img:1.0.0}]
    x-extension: kept
    access: {type: ociArtifact, imageReference: ghcr.io/x/img:1.0.0}
`

const rulesWant = `{"component":{` +
	`"componentReferences":[{"componentName":"example.com/test/dep","labels":[{"name":"note","value":"kept"}],"name":"dep","version":"1.0.0"}],` +
	`"creationTime":"2024-01-02T01:04:06Z",` +
	`"labels":[{"name":"a","signing":true,"value":{"b":[1,2,"<&>"]}}],` +
	`"name":"example.com/test/rules",` +
	`"provider":{"labels":[{"name":"tier","signing":true,"value":1.5,"version":"v1"}],"name":"acme.org"},` +
	`"resources":[{"name":"none","relation":"local","type":"blob","version":"2.0.0"},` +
	`{"extraIdentity":{"arch":"amd64"},"name":"img","referenceHints":[{"reference":"x/img:1.0.0","type":"oci"}],"relation":"external","type":"ociImage","version":"1.0.0","x-extension":"kept"}],` +
	`"sources":[{"name":"src","type":"git","version":"2.0.0"}],` +
	`"version":"2.0.0"}}`

func TestNormaliseBothSchemas(t *testing.T) {
	for _, tc := range []struct{ name, doc string }{{"v2", rulesV2}, {"v3alpha1", rulesV3}} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := signing.Normalise(decode(t, []byte(tc.doc)), signing.JSONNormalisationV3)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != rulesWant {
				t.Fatalf("got  %s\nwant %s", got, rulesWant)
			}
		})
	}
}

// What the digest covers, and what it deliberately does not.
func TestDigestCoverage(t *testing.T) {
	base := decode(t, []byte(rulesV2))
	baseDigest, err := signing.Digest(base, signing.JSONNormalisationV3, signing.SHA256)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		old, new string
		covered  bool
	}{
		{"repository contexts", "baseUrl: ghcr.io}", "baseUrl: example.org}", false},
		{"resource access", "imageReference: ghcr.io/x/img:1.0.0", "imageReference: mirror.io/x/img:1.0.0", false},
		{"source access", "repoUrl: github.com/x/y", "repoUrl: github.com/x/z", false},
		{"resource srcRefs", "identitySelector: {name: src}", "identitySelector: {name: other}", false},
		{"non-signing component label", "value: drop}", "value: changed}", false},
		{"non-signing provider label", `"value":"x"}`, `"value":"y"}`, false},
		{"signing=false source label", "value: v, signing: false", "value: w, signing: false", false},
		{"digest of a none-access resource", `value: "00"`, `value: "11"`, false},
		{"creationTime within the same second", "05.6+02:00", "05.7+02:00", false},
		{"signing component label", `"<&>"]}, signing: true`, `"<>"]}, signing: true`, true},
		{"signing provider label", `"value":1.50`, `"value":1.51`, true},
		{"non-signing reference label", "value: kept", "value: edited", true},
		{"reference version", "version: 1.0.0\n    extraIdentity: {}", "version: 1.0.1\n    extraIdentity: {}", true},
		{"resource extra identity", "arch: amd64", "arch: arm64", true},
		{"resource relation", "relation: external", "relation: local", true},
		{"unknown resource field", "x-extension: kept", "x-extension: changed", true},
		{"creationTime", "05.6+02:00", "07.6+02:00", true},
		{"component version", "  version: 2.0.0\n  creationTime", "  version: 2.0.1\n  creationTime", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := edit(t, base, tc.old, tc.new)
			got, err := signing.Digest(d, signing.JSONNormalisationV3, signing.SHA256)
			if err != nil {
				t.Fatal(err)
			}
			if covered := got != baseDigest; covered != tc.covered {
				t.Fatalf("change covered by the digest = %v, want %v", covered, tc.covered)
			}
		})
	}
	t.Run("signatures and nested digests", func(t *testing.T) {
		d := decode(t, []byte(rulesV2+"signatures: []\nnestedDigests: [{name: x}]\n"))
		if got, _ := signing.Digest(d, signing.JSONNormalisationV3, signing.SHA256); got != baseDigest {
			t.Fatal("signatures or nestedDigests changed the digest")
		}
	})
}

// jsonNormalisation/v1 as the OCM library writes it: entry form, meta kept,
// provider object because it has labels, sources dropped, labels on
// references filtered, empty extraIdentity written as null, HTML escaped.
func TestNormaliseV1(t *testing.T) {
	const doc = `meta:
  schemaVersion: v2
component:
  name: example.com/test/v1
  version: 1.0.0
  provider: '{"name":"acme.org","labels":[{"name":"team","value":"x"}]}'
  repositoryContexts: []
  sources: [{name: s, version: 1.0.0, type: git, access: {type: none}}]
  componentReferences:
  - {name: dep, componentName: example.com/test/dep, version: 1.0.0, labels: [{name: note, value: dropped}]}
  resources:
  - {name: r, version: 1.0.0, type: "blob<v1>", relation: local, extraIdentity: {os: linux}, access: {type: localBlob, localReference: "sha256:00"}}
`
	const want = `[{"component":[` +
		`{"componentReferences":[[{"componentName":"example.com/test/dep"},{"extraIdentity":null},{"name":"dep"},{"version":"1.0.0"}]]},` +
		`{"name":"example.com/test/v1"},{"provider":[{"name":"acme.org"}]},` +
		`{"resources":[[{"extraIdentity":[{"os":"linux"}]},{"name":"r"},{"relation":"local"},{"type":"blob\u003cv1\u003e"},{"version":"1.0.0"}]]},` +
		`{"version":"1.0.0"}]},{"meta":[{"schemaVersion":"v2"}]}]`
	got, err := signing.Normalise(decode(t, []byte(doc)), signing.JSONNormalisationV1)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

// v1 and v2 add the version to the extra identity of a resource whose
// identity is ambiguous; v3 does not.
func TestLegacyIdentityDefaulting(t *testing.T) {
	const doc = `meta: {schemaVersion: v2}
component:
  name: example.com/test/dup
  version: 1.0.0
  provider: acme.org
  resources:
  - {name: r, version: 1.0.0, type: blob, relation: local, access: {type: none}}
  - {name: r, version: 2.0.0, type: blob, relation: local, access: {type: none}}
`
	d := decode(t, []byte(doc))
	for _, tc := range []struct{ alg, want string }{
		{signing.JSONNormalisationV2, `"resources":[{"extraIdentity":{"version":"1.0.0"},"name":"r","relation":"local","type":"blob","version":"1.0.0"},{"name":"r","relation":"local","type":"blob","version":"2.0.0"}]`},
		{signing.JSONNormalisationV3, `"resources":[{"name":"r","relation":"local","type":"blob","version":"1.0.0"},{"name":"r","relation":"local","type":"blob","version":"2.0.0"}]`},
		{signing.JSONNormalisationV1, `{"resources":[[{"extraIdentity":[{"version":"1.0.0"}]},{"name":"r"},{"relation":"local"},{"type":"blob"},{"version":"1.0.0"}],[{"extraIdentity":null},{"name":"r"},{"relation":"local"},{"type":"blob"},{"version":"2.0.0"}]]}`},
	} {
		got, err := signing.Normalise(d, tc.alg)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(got), tc.want) {
			t.Errorf("%s: %s\ndoes not contain %s", tc.alg, got, tc.want)
		}
	}
}

func TestNormaliseErrors(t *testing.T) {
	v3 := decode(t, []byte(rulesV3))
	good := decode(t, []byte(rulesV2))
	for _, tc := range []struct {
		name string
		d    *ocm.Descriptor
		alg  string
		want error
		msg  string
	}{
		{"unknown algorithm", good, "jsonNormalisation/v9", errdef.ErrInvalidInput, "jsonNormalisation/v9"},
		{"nil descriptor", nil, signing.JSONNormalisationV3, errdef.ErrInvalidInput, "nil"},
		{"no raw bytes", &ocm.Descriptor{Name: "example.com/x", Version: "1"}, signing.JSONNormalisationV3, errdef.ErrInvalidInput, "raw"},
		{"v1 of a v3alpha1 descriptor", v3, signing.JSONNormalisationV1, errdef.ErrInvalidInput, "schema v2"},
		{"bad creationTime", edit(t, good, "2024-01-02T03:04:05.6+02:00", "yesterday"), signing.JSONNormalisationV3, errdef.ErrInvalidDescriptor, "creationTime"},
		// Raw set directly: ocm.DecodeDescriptor would already refuse these.
		{"provider not JSON", &ocm.Descriptor{Raw: []byte(strings.Replace(rulesV2, `"acme.org",`, `"acme.org"`, 1))}, signing.JSONNormalisationV3, errdef.ErrInvalidDescriptor, "provider"},
		{"resources not a list", &ocm.Descriptor{Raw: []byte("meta: {schemaVersion: v2}\ncomponent: {name: a, resources: {}}\n")}, signing.JSONNormalisationV3, errdef.ErrInvalidDescriptor, "resources"},
		{"not an object", &ocm.Descriptor{Raw: []byte("- a\n")}, signing.JSONNormalisationV3, errdef.ErrInvalidDescriptor, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := signing.Normalise(tc.d, tc.alg)
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("err = %v, want %v mentioning %q", err, tc.want, tc.msg)
			}
		})
	}
	if _, err := signing.Digest(good, signing.JSONNormalisationV3, "MD5"); !errors.Is(err, errdef.ErrInvalidInput) {
		t.Fatalf("MD5: err = %v", err)
	}
}
