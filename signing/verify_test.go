package signing_test

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"errors"
	"fmt"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/ocm"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/signing"
)

// The CLI-signed fixtures verify, the bundle including its reference digest.
func TestVerifyFixtures(t *testing.T) {
	repo := openRepo(t, "ctf-signed")
	v := signing.Verifier{
		Keys:           map[string]crypto.PublicKey{"mysig": fixtureKey(t, "keys", "key.pub")},
		Lookup:         signing.RepositoryLookup(repo),
		RequireDigests: true,
	}
	for _, tc := range []struct {
		component, digest string
		refs              []signing.ReferenceResult
	}{
		{component: signedApp, digest: appDigest},
		{component: signedBundle, digest: bundleDigest, refs: []signing.ReferenceResult{{
			Parent: signedBundle + ":1.0.0", Name: "app", Component: signedApp, Version: "1.0.0",
			NormalisationAlgorithm: signing.JSONNormalisationV3, HashAlgorithm: signing.SHA256, Digest: appDigest,
		}}},
	} {
		t.Run(tc.component, func(t *testing.T) {
			rep, err := v.Verify(context.Background(), lookup(t, repo, tc.component, "1.0.0"))
			if err != nil {
				t.Fatal(err)
			}
			want := signing.Result{
				Component: tc.component, Version: "1.0.0", Signature: "mysig", Algorithm: signing.RSAPKCS1v15,
				NormalisationAlgorithm: signing.JSONNormalisationV3, HashAlgorithm: signing.SHA256, Digest: tc.digest,
			}
			if len(rep.Signatures) != 1 || rep.Signatures[0] != want {
				t.Fatalf("signatures %+v, want %+v", rep.Signatures, want)
			}
			if fmt.Sprint(rep.References) != fmt.Sprint(tc.refs) {
				t.Fatalf("references %+v, want %+v", rep.References, tc.refs)
			}
		})
	}
}

// Old data: the upstream component archive signed with jsonNormalisation/v1
// and the legacy hash name sha256.
func TestVerifyJSONNormalisationV1Fixture(t *testing.T) {
	dir := []string{"upstream-testdata", "signed-rsa-jsonNormalisationV1-component-archive"}
	d := lookup(t, openRepo(t, append(dir, "component-archive")...), "github.com/mandelsoft/test", "1.0.0")
	key := fixtureKey(t, append(dir, "rsa.pub")...)
	r, err := signing.VerifySignature(d, "test", key)
	if err != nil {
		t.Fatal(err)
	}
	if r.NormalisationAlgorithm != signing.JSONNormalisationV1 || r.Digest != d.Signatures[0].Digest.Value {
		t.Fatalf("result %+v", r)
	}
	tampered := edit(t, d, "type: PlainText", "type: plainText")
	if _, err := signing.VerifySignature(tampered, "test", key); !errors.Is(err, errdef.ErrDigestMismatch) {
		t.Fatalf("tampered v1 descriptor: err = %v, want a digest mismatch", err)
	}
}

func TestVerifySignatureRefusals(t *testing.T) {
	app := lookup(t, openRepo(t, "ctf-signed"), signedApp, "1.0.0")
	key := fixtureKey(t, "keys", "key.pub")
	sigValue := app.Signatures[0].Signature.Value
	flipped := sigValue[:len(sigValue)-1] + string("0123456789abcdef"[(strings.IndexByte("0123456789abcdef", sigValue[len(sigValue)-1])+1)%16])

	for _, tc := range []struct {
		name     string
		d        *ocm.Descriptor
		sigName  string
		key      crypto.PublicKey
		wantErr  []error // nil: must verify
		contains string
	}{
		{name: "valid", d: app, sigName: "mysig", key: key},
		{name: "edited non-signing label", d: edit(t, app, "value: not part of the digest (no signing flag)", "value: edited"), sigName: "mysig", key: key},
		{name: "edited access (transport may rewrite it)", d: edit(t, app, "mediaType: application/x-tgz", "mediaType: application/gzip"), sigName: "mysig", key: key},
		{name: "edited provider label (non-signing)", d: edit(t, app, `"value":"fixtures"`, `"value":"edited"`), sigName: "mysig", key: key},
		{
			name: "wrong key", d: app, sigName: "mysig", key: &privateKey(t).PublicKey,
			wantErr: []error{errdef.ErrSignature}, contains: "does not verify",
		},
		{
			name: "edited signing label", d: edit(t, app, "value: stable", "value: beta"), sigName: "mysig", key: key,
			wantErr: []error{errdef.ErrSignature, errdef.ErrDigestMismatch}, contains: signedApp + ":1.0.0",
		},
		{
			name: "edited resource digest", d: edit(t, app, "value: cfad8f0c7d2ab2aaad44a6e4d60bbee6bd2cb68392e3bcc7c15fece5a7262e05", `value: "`+strings.Repeat("0", 64)+`"`),
			sigName: "mysig", key: key, wantErr: []error{errdef.ErrSignature, errdef.ErrDigestMismatch},
		},
		{
			name: "flipped signature hex", d: edit(t, app, sigValue, flipped), sigName: "mysig", key: key,
			wantErr: []error{errdef.ErrSignature}, contains: `signature "mysig"`,
		},
		{
			name: "signature not hex", d: edit(t, app, sigValue, "zz"+sigValue[2:]), sigName: "mysig", key: key,
			wantErr: []error{errdef.ErrSignature}, contains: "hex",
		},
		{
			name: "missing signature name", d: app, sigName: "other", key: key,
			wantErr: []error{errdef.ErrSignature}, contains: "signatures present: mysig",
		},
		{
			name: "unsupported algorithm", d: edit(t, app, "algorithm: RSASSA-PKCS1-V1_5", "algorithm: ECDSA-P256"), sigName: "mysig", key: key,
			wantErr: []error{errdef.ErrSignature}, contains: "ECDSA-P256",
		},
		{
			name: "sigstore", d: decode(t, readFixture(t, "upstream-testdata", "sigstore-signed-jsonNormalisationV3-descriptor.yaml")),
			sigName: "sigstore-recommended", key: key, wantErr: []error{errdef.ErrSignature}, contains: "older OCM sigstore format",
		},
		{
			name: "unsupported media type", d: edit(t, app, "mediaType: application/vnd.ocm.signature.rsa", "mediaType: application/json"), sigName: "mysig", key: key,
			wantErr: []error{errdef.ErrSignature}, contains: "media type",
		},
		{
			name: "unsupported hash", d: edit(t, app, "hashAlgorithm: SHA-256\n    normalisationAlgorithm: jsonNormalisation/v3", "hashAlgorithm: MD5\n    normalisationAlgorithm: jsonNormalisation/v3"),
			sigName: "mysig", key: key, wantErr: []error{errdef.ErrSignature, errdef.ErrInvalidInput}, contains: "MD5",
		},
		{
			name: "not an RSA key", d: app, sigName: "mysig", key: "not a key",
			wantErr: []error{errdef.ErrSignature, errdef.ErrInvalidInput}, contains: "string",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := signing.VerifySignature(tc.d, tc.sigName, tc.key)
			if tc.wantErr == nil {
				if err != nil {
					t.Fatal(err)
				}
				if r.Digest != appDigest {
					t.Fatalf("digest %s", r.Digest)
				}
				return
			}
			if err == nil {
				t.Fatal("verified, want an error")
			}
			for _, w := range tc.wantErr {
				if !errors.Is(err, w) {
					t.Errorf("err = %v, want it to wrap %v", err, w)
				}
			}
			if !strings.Contains(err.Error(), tc.contains) {
				t.Errorf("err = %v, want it to mention %q", err, tc.contains)
			}
			if tc.name == "wrong key" && errors.Is(err, errdef.ErrDigestMismatch) {
				t.Errorf("a wrong key is not a digest mismatch: %v", err)
			}
		})
	}
}

// Signatures made here with a generated key: both RSA schemes, both hashes,
// hex and PEM values.
func TestSignVerifyRoundTrip(t *testing.T) {
	key := privateKey(t)
	for _, s := range []sig{
		{name: "pss", algorithm: signing.RSAPSS, mediaType: signing.MediaTypeRSAPSS, hash: signing.SHA256},
		{name: "pss512", algorithm: signing.RSAPSS, mediaType: signing.MediaTypeRSAPSS, hash: signing.SHA512},
		{name: "pkcs512", algorithm: signing.RSAPKCS1v15, mediaType: signing.MediaTypeRSA, hash: signing.SHA512},
		{name: "pss-pem", algorithm: signing.RSAPSS, mediaType: signing.MediaTypePEM, hash: signing.SHA256, pem: true},
		{name: "pkcs-v4alpha1", algorithm: signing.RSAPKCS1v15, mediaType: signing.MediaTypeRSA, hash: signing.SHA256, norm: signing.JSONNormalisationV4Alpha1},
		{name: "pkcs-v2", algorithm: signing.RSAPKCS1v15, mediaType: signing.MediaTypeRSA, hash: signing.SHA256, norm: signing.JSONNormalisationV2},
		{name: "pkcs-v1", algorithm: signing.RSAPKCS1v15, mediaType: signing.MediaTypeRSA, hash: "sha256", norm: signing.JSONNormalisationV1},
	} {
		t.Run(s.name, func(t *testing.T) {
			d := sign(t, testDoc, key, s)
			r, err := signing.VerifySignature(d, s.name, &key.PublicKey)
			if err != nil {
				t.Fatal(err)
			}
			if r.Algorithm != s.algorithm || r.HashAlgorithm != s.hash {
				t.Fatalf("result %+v", r)
			}
			tampered := edit(t, d, "value: stable", "value: unstable")
			if _, err := signing.VerifySignature(tampered, s.name, &key.PublicKey); !errors.Is(err, errdef.ErrDigestMismatch) {
				t.Fatalf("tampered: err = %v", err)
			}
			other, _ := rsa.GenerateKey(rand.Reader, 1024)
			if _, err := signing.VerifySignature(d, s.name, &other.PublicKey); !errors.Is(err, errdef.ErrSignature) {
				t.Fatalf("other key: err = %v", err)
			}
		})
	}
	t.Run("PEM block for another algorithm", func(t *testing.T) {
		d := sign(t, testDoc, key, sig{name: "x", algorithm: signing.RSAPSS, mediaType: signing.MediaTypePEM, hash: signing.SHA256, pem: true})
		d = edit(t, d, "algorithm: RSASSA-PSS\n", "algorithm: RSASSA-PKCS1-V1_5\n")
		if _, err := signing.VerifySignature(d, "x", &key.PublicKey); !errors.Is(err, errdef.ErrSignature) || !strings.Contains(err.Error(), "PEM signature block") {
			t.Fatalf("err = %v", err)
		}
	})
}

// refDoc builds a v2 descriptor with references; a reference with digest ""
// gets none.
func refDoc(t *testing.T, name string, refs ...[3]string) *ocm.Descriptor {
	t.Helper()
	var rs []any
	for _, r := range refs {
		m := map[string]any{"name": strings.ReplaceAll(r[0], "/", "-"), "componentName": r[0], "version": r[1]}
		if r[2] != "" {
			m["digest"] = map[string]any{"hashAlgorithm": signing.SHA256, "normalisationAlgorithm": signing.JSONNormalisationV3, "value": r[2]}
		}
		rs = append(rs, m)
	}
	doc := map[string]any{
		"meta": map[string]any{"schemaVersion": "v2"},
		"component": map[string]any{
			"name": name, "version": "1.0.0", "provider": "acme.org",
			"componentReferences": rs, "resources": []any{}, "sources": []any{},
		},
	}
	b, err := yaml.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return decode(t, b)
}

func digestOf(t *testing.T, d *ocm.Descriptor) string {
	t.Helper()
	s, err := signing.Digest(d, signing.JSONNormalisationV3, signing.SHA256)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// mapLookup serves descriptors from a map and counts lookups.
type mapLookup struct {
	m     map[string]*ocm.Descriptor
	calls map[string]int
}

func newLookup(ds ...*ocm.Descriptor) *mapLookup {
	l := &mapLookup{m: map[string]*ocm.Descriptor{}, calls: map[string]int{}}
	for _, d := range ds {
		l.m[d.Name+":"+d.Version] = d
	}
	return l
}

func (l *mapLookup) lookup(_ context.Context, c, v string) (*ocm.Descriptor, error) {
	l.calls[c+":"+v]++
	if d, ok := l.m[c+":"+v]; ok {
		return d, nil
	}
	return nil, fmt.Errorf("component version %s:%s %w", c, v, errdef.ErrNotFound)
}

func TestVerifyReferences(t *testing.T) {
	ctx := context.Background()
	repo := openRepo(t, "ctf-signed")
	bundle := lookup(t, repo, signedBundle, "1.0.0")
	app := lookup(t, repo, signedApp, "1.0.0")

	// A chain c0 -> c1 -> c2 -> c3 with correct digests.
	c3 := refDoc(t, "example.com/chain/c3")
	c2 := refDoc(t, "example.com/chain/c2", [3]string{c3.Name, "1.0.0", digestOf(t, c3)})
	c1 := refDoc(t, "example.com/chain/c1", [3]string{c2.Name, "1.0.0", digestOf(t, c2)})
	c0 := refDoc(t, "example.com/chain/c0", [3]string{c1.Name, "1.0.0", digestOf(t, c1)})
	chain := newLookup(c0, c1, c2, c3)

	// A cycle a -> b -> a. b's digest of a cannot be right (it would need a
	// hash fixed point), but the cycle is found before that matters.
	b := refDoc(t, "example.com/cycle/b", [3]string{"example.com/cycle/a", "1.0.0", strings.Repeat("0", 64)})
	a := refDoc(t, "example.com/cycle/a", [3]string{b.Name, "1.0.0", digestOf(t, b)})

	// A diamond top -> l, r -> bottom: bottom's digest is checked on both
	// edges but its own references are expanded once.
	bottom := refDoc(t, "example.com/diamond/bottom")
	l := refDoc(t, "example.com/diamond/l", [3]string{bottom.Name, "1.0.0", digestOf(t, bottom)})
	r := refDoc(t, "example.com/diamond/r", [3]string{bottom.Name, "1.0.0", digestOf(t, bottom)})
	top := refDoc(t, "example.com/diamond/top", [3]string{l.Name, "1.0.0", digestOf(t, l)}, [3]string{r.Name, "1.0.0", digestOf(t, r)})

	noDigest := refDoc(t, "example.com/test/nodigest", [3]string{c3.Name, "1.0.0", ""})

	for _, tc := range []struct {
		name    string
		d       *ocm.Descriptor
		lookup  signing.LookupFunc
		opts    []signing.ReferenceOption
		results int
		wantErr []error
	}{
		{name: "fixture bundle", d: bundle, lookup: signing.RepositoryLookup(repo), results: 1},
		{
			name: "referenced descriptor tampered", d: bundle,
			lookup:  newLookup(edit(t, app, "value: stable", "value: beta")).lookup,
			wantErr: []error{errdef.ErrSignature, errdef.ErrDigestMismatch},
		},
		{
			name: "referenced descriptor missing", d: bundle, lookup: newLookup().lookup,
			wantErr: []error{errdef.ErrSignature, errdef.ErrNotFound},
		},
		{
			name: "lookup returns another version", d: bundle,
			lookup:  func(ctx context.Context, c, v string) (*ocm.Descriptor, error) { return c3, nil },
			wantErr: []error{errdef.ErrSignature},
		},
		{name: "chain", d: c0, lookup: chain.lookup, results: 3},
		{name: "chain deeper than the limit", d: c0, lookup: chain.lookup, opts: []signing.ReferenceOption{signing.WithMaxDepth(2)}, wantErr: []error{errdef.ErrSignature, errdef.ErrLimitExceeded}},
		{name: "cycle", d: a, lookup: newLookup(a, b).lookup, wantErr: []error{errdef.ErrSignature, errdef.ErrInvalidDescriptor}},
		{name: "diamond", d: top, lookup: newLookup(top, l, r, bottom).lookup, results: 4},
		{name: "no digest, not required", d: noDigest, lookup: chain.lookup, results: 1},
		{name: "no digest, required", d: noDigest, lookup: chain.lookup, opts: []signing.ReferenceOption{signing.WithRequireDigests()}, wantErr: []error{errdef.ErrSignature}},
		{name: "no lookup", d: bundle, wantErr: []error{errdef.ErrInvalidInput}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := signing.VerifyReferences(ctx, tc.d, tc.lookup, tc.opts...)
			if tc.wantErr == nil {
				if err != nil {
					t.Fatal(err)
				}
				if len(res) != tc.results {
					t.Fatalf("%d results, want %d: %+v", len(res), tc.results, res)
				}
				return
			}
			for _, w := range tc.wantErr {
				if !errors.Is(err, w) {
					t.Errorf("err = %v, want it to wrap %v", err, w)
				}
			}
		})
	}

	t.Run("reference without digest is reported, not followed", func(t *testing.T) {
		lk := newLookup(c3)
		res, err := signing.VerifyReferences(ctx, noDigest, lk.lookup)
		if err != nil || len(res) != 1 || res[0].Digest != "" || lk.calls[c3.Name+":1.0.0"] != 0 {
			t.Fatalf("res %+v, err %v, lookups %v", res, err, lk.calls)
		}
	})
	t.Run("diamond expands the shared version once", func(t *testing.T) {
		lk := newLookup(top, l, r, bottom)
		if _, err := signing.VerifyReferences(ctx, top, lk.lookup); err != nil {
			t.Fatal(err)
		}
		if lk.calls[bottom.Name+":1.0.0"] != 2 || lk.calls[l.Name+":1.0.0"] != 1 {
			t.Fatalf("lookups %v", lk.calls)
		}
	})
	t.Run("cancelled context", func(t *testing.T) {
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		if _, err := signing.VerifyReferences(cctx, c0, chain.lookup); !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestVerifierConfiguration(t *testing.T) {
	repo := openRepo(t, "ctf-signed")
	bundle := lookup(t, repo, signedBundle, "1.0.0")
	key := fixtureKey(t, "keys", "key.pub")
	for _, tc := range []struct {
		name string
		v    signing.Verifier
		want error
	}{
		{"no keys", signing.Verifier{Lookup: signing.RepositoryLookup(repo)}, errdef.ErrInvalidInput},
		{"references but no lookup", signing.Verifier{Keys: map[string]crypto.PublicKey{"mysig": key}}, errdef.ErrInvalidInput},
		{"a second required signature is missing", signing.Verifier{Keys: map[string]crypto.PublicKey{"mysig": key, "release": key}, Lookup: signing.RepositoryLookup(repo)}, errdef.ErrSignature},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := tc.v.Verify(context.Background(), bundle); !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
		})
	}
}

func TestVerifyResourceDigest(t *testing.T) {
	app := lookup(t, openRepo(t, "ctf-signed"), signedApp, "1.0.0")
	chart, manifests := &app.Resources[0], &app.Resources[1]
	const manifestsHex = "cfad8f0c7d2ab2aaad44a6e4d60bbee6bd2cb68392e3bcc7c15fece5a7262e05"
	const chartHex = "8cc80185ab75ed0521e3e8f67c77c9a31132e90e7e0ff19c4360db6641eacafa"
	zero := strings.Repeat("0", 64)

	withDigest := func(r ocm.Resource, dg *ocm.Digest) *ocm.Resource { r.Digest = dg; return &r }
	noneAccess := *manifests
	noneAccess.Access = ocm.Access{Type: "none"}

	for _, tc := range []struct {
		name    string
		r       *ocm.Resource
		hex     string
		alg     string
		checked bool
		wantErr error
	}{
		{"blob digest", manifests, manifestsHex, signing.GenericBlobDigestV1, true, nil},
		{"blob digest with prefix, upper case", manifests, "sha256:" + strings.ToUpper(manifestsHex), signing.GenericBlobDigestV1, true, nil},
		{"oci manifest digest", chart, "sha256:" + chartHex, signing.OCIArtifactDigestV1, true, nil},
		{"blob mismatch", manifests, zero, signing.GenericBlobDigestV1, false, errdef.ErrDigestMismatch},
		{"manifest mismatch", chart, "sha256:" + zero, signing.OCIArtifactDigestV1, false, errdef.ErrDigestMismatch},
		{"wrong kind computed", chart, chartHex, signing.GenericBlobDigestV1, false, errdef.ErrInvalidInput},
		{"wrong hash prefix", manifests, "sha512:" + manifestsHex, signing.GenericBlobDigestV1, false, errdef.ErrInvalidInput},
		{"short hex", manifests, "abc", signing.GenericBlobDigestV1, false, errdef.ErrInvalidInput},
		{"no digest", withDigest(*manifests, nil), zero, signing.GenericBlobDigestV1, false, nil},
		{"excluded", withDigest(*manifests, &ocm.Digest{HashAlgorithm: signing.NoDigest, NormalisationAlgorithm: signing.ExcludeFromSignature, Value: signing.NoDigest}), zero, signing.GenericBlobDigestV1, false, nil},
		{"access none", &noneAccess, zero, signing.GenericBlobDigestV1, false, nil},
		{"unknown digest kind", withDigest(*manifests, &ocm.Digest{HashAlgorithm: signing.SHA256, NormalisationAlgorithm: "magic/v1", Value: zero}), zero, "magic/v1", false, errdef.ErrSignature},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checked, err := signing.VerifyResourceDigest(tc.r, tc.hex, tc.alg)
			if checked != tc.checked || !errors.Is(err, tc.wantErr) || (tc.wantErr == nil) != (err == nil) {
				t.Fatalf("checked=%v err=%v, want checked=%v err=%v", checked, err, tc.checked, tc.wantErr)
			}
		})
	}
}
