package signing_test

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/ocmbuild"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/sigstoretest"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/testutil"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/ocm"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/signing"
)

var updateKeyless = flag.Bool("update-keyless", false, "rewrite the committed keyless fixtures in testdata/sigstore")

const (
	ciIdentity = "https://github.com/example-org/platform/.github/workflows/release.yml@refs/heads/main"
	ciIssuer   = "https://token.actions.githubusercontent.com"
)

// KeylessComponent is the component of testdata/sigstore/ctf.
const KeylessComponent = "example.com/keyless/hello"

const keylessConfigMap = `apiVersion: v1
kind: ConfigMap
metadata:
  name: hello-keyless
data:
  greeting: signed keyless, verified offline
`

// keylessDir holds the committed keyless fixtures (see its README).
var keylessDir = filepath.Join("..", "testdata", "sigstore")

// ciPolicy is the identity the fixtures are signed with.
var ciPolicy = signing.Identity{Subject: ciIdentity, Issuer: ciIssuer}

// keylessCase is a virtual Sigstore and a descriptor the OCM CLI v0.13
// wrote, signed keyless under "keyless".
type keylessCase struct {
	authority *sigstoretest.Authority
	root      *signing.TrustedRoot
	raw       []byte // the descriptor before the keyless signature
}

func newKeylessCase(t testing.TB) *keylessCase {
	t.Helper()
	a, err := sigstoretest.New()
	if err != nil {
		t.Fatal(err)
	}
	return &keylessCase{authority: a, root: trustedRoot(t, a, sigstoretest.RootOptions{}), raw: v2DescriptorBytes(t, "ctf__helm-dir_1.0.0.yaml")}
}

func trustedRoot(t testing.TB, a *sigstoretest.Authority, o sigstoretest.RootOptions) *signing.TrustedRoot {
	t.Helper()
	b, err := a.TrustedRoot(o)
	if err != nil {
		t.Fatal(err)
	}
	r, err := signing.ParseTrustedRoot(b)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// v2DescriptorBytes is the one descriptor of an `ocm get cv -o yaml` file.
func v2DescriptorBytes(t testing.TB, file string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(v2Dir, "descriptors", file))
	if err != nil {
		t.Fatal(err)
	}
	var list []any
	if err := yaml.Unmarshal(b, &list); err != nil || len(list) != 1 {
		t.Fatalf("%s: want a list of one descriptor: %v", file, err)
	}
	one, err := yaml.Marshal(list[0])
	if err != nil {
		t.Fatal(err)
	}
	return one
}

// sign adds the keyless signature, signing what sign is given (the digest
// bytes, unless artifact overrides them).
func (c *keylessCase) sign(t testing.TB, identity, issuer string, o sigstoretest.SignOptions, artifact []byte) *ocm.Descriptor {
	t.Helper()
	signed, err := sigstoretest.SignDescriptor(c.raw, "keyless", func(digest []byte) ([]byte, error) {
		if artifact != nil {
			digest = artifact
		}
		return c.authority.Sign(identity, issuer, digest, o)
	})
	if err != nil {
		t.Fatal(err)
	}
	return decode(t, signed)
}

func keyless(t testing.TB, r *signing.TrustedRoot, id signing.Identity, private bool) *signing.Keyless {
	t.Helper()
	k, err := signing.NewKeyless(r, id, private)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// mustRefuse checks a refusal: one line, a signature error, naming the
// component, version and signature, and saying want.
func mustRefuse(t *testing.T, err error, want string) {
	t.Helper()
	if err == nil {
		t.Fatalf("verified; want a refusal saying %q", want)
	}
	msg := err.Error()
	if !errors.Is(err, errdef.ErrSignature) || strings.Contains(msg, "\n") || len(msg) > 1000 {
		t.Errorf("want one bounded line wrapping ErrSignature, got %d bytes: %v", len(msg), err)
	}
	if !strings.Contains(msg, "ocm.example/fixtures/helm-dir:1.0.0") || !strings.Contains(msg, `signature "keyless"`) {
		t.Errorf("refusal does not name component, version and signature: %v", err)
	}
	if !strings.Contains(msg, want) {
		t.Errorf("refusal %q does not say %q", msg, want)
	}
}

func TestKeylessVerifies(t *testing.T) {
	c := newKeylessCase(t)
	d := c.sign(t, ciIdentity, ciIssuer, sigstoretest.SignOptions{}, nil)
	for name, id := range map[string]signing.Identity{
		"exact":  ciPolicy,
		"regexp": {SubjectRegexp: `https://github\.com/example-org/[^/]+/\.github/workflows/release\.yml@refs/heads/main`, IssuerRegexp: `https://token\.actions\.githubusercontent\.com`},
		"both":   {Subject: ciIdentity, SubjectRegexp: `.*@refs/heads/main`, Issuer: ciIssuer},
	} {
		t.Run(name, func(t *testing.T) {
			res, err := signing.VerifySignature(d, "keyless", keyless(t, c.root, id, false))
			if err != nil {
				t.Fatal(err)
			}
			if res.Algorithm != signing.SigstoreV1Alpha1 || res.NormalisationAlgorithm != "jsonNormalisation/v4alpha1" ||
				!strings.HasPrefix(res.Digest, "571b4e19") {
				t.Errorf("result %+v: want Sigstore/v1alpha1 over the OCM CLI's v4alpha1 digest 571b4e19…", res)
			}
			if !strings.Contains(res.Signer, ciIdentity) || !strings.Contains(res.Signer, ciIssuer) || !strings.Contains(res.Signer, "logged ") {
				t.Errorf("signer %q: want identity, issuer and the log time", res.Signer)
			}
		})
	}
	// The OCM CLI's other signatures of the same version still verify
	// next to it.
	if _, err := signing.VerifySignature(d, "fx-pss", v2Key(t, "rsa.pub.pem")); err != nil {
		t.Errorf("fx-pss next to the keyless signature: %v", err)
	}
}

// The legacy algorithm name with a bundle is the same signature.
func TestKeylessLegacyAlgorithmName(t *testing.T) {
	c := newKeylessCase(t)
	d := c.sign(t, ciIdentity, ciIssuer, sigstoretest.SignOptions{}, nil)
	d = edit(t, d, "algorithm: "+signing.SigstoreV1Alpha1, "algorithm: "+signing.SigstoreLegacy)
	if _, err := signing.VerifySignature(d, "keyless", keyless(t, c.root, ciPolicy, false)); err != nil {
		t.Fatal(err)
	}
}

func TestKeylessRefusals(t *testing.T) {
	c := newKeylessCase(t)
	good := c.sign(t, ciIdentity, ciIssuer, sigstoretest.SignOptions{}, nil)
	other, err := sigstoretest.New()
	if err != nil {
		t.Fatal(err)
	}
	otherRoot := trustedRoot(t, other, sigstoretest.RootOptions{})
	for _, tc := range []struct {
		name string
		d    *ocm.Descriptor
		k    *signing.Keyless
		want string
	}{
		{"wrong identity", good, keyless(t, c.root, signing.Identity{Subject: "release@example.com", Issuer: ciIssuer}, false),
			`signed by "` + ciIdentity + `" (OIDC issuer "` + ciIssuer + `"), the policy requires identity "release@example.com"`},
		{"wrong issuer", good, keyless(t, c.root, signing.Identity{Subject: ciIdentity, Issuer: "https://accounts.google.com"}, false),
			`the policy requires identity "` + ciIdentity + `", issuer "https://accounts.google.com"`},
		// Identities are whole values: neither an exact prefix nor an
		// unanchored regexp accepts a longer identity.
		{"prefix exact", good, keyless(t, c.root, signing.Identity{Subject: "https://github.com/example-org/platform", Issuer: ciIssuer}, false), "the policy requires"},
		{"prefix regexp", good, keyless(t, c.root, signing.Identity{SubjectRegexp: `https://github\.com/example-org/platform`, Issuer: ciIssuer}, false), "the policy requires"},
		{"issuer prefix regexp", good, keyless(t, c.root, signing.Identity{Subject: ciIdentity, IssuerRegexp: `https://token`}, false), "the policy requires"},
		{"another trusted root", good, keyless(t, otherRoot, ciPolicy, false), "does not verify against the trusted root"},
		{"tampered descriptor", edit(t, good, "tag: image.tag", "tag: image.version"), keyless(t, c.root, ciPolicy, false), "the signed one is"},
		{"tampered resource digest", edit(t, good, "value: 3674d7d1", "value: 4674d7d1"), keyless(t, c.root, ciPolicy, false), "the signed one is"},
		{"bundle for another digest", c.sign(t, ciIdentity, ciIssuer, sigstoretest.SignOptions{}, []byte("another digest, same length 32b")), keyless(t, c.root, ciPolicy, false), "does not verify against the trusted root"},
		// Logged 20 minutes after the ten-minute certificate expired,
		// and no timestamp from when it was valid.
		{"expired at log time", c.sign(t, ciIdentity, ciIssuer, sigstoretest.SignOptions{LogAt: time.Now().Add(20 * time.Minute), NoTimestamp: true}, nil),
			keyless(t, c.root, ciPolicy, false), "integrated time outside certificate validity"},
		{"no log entry", c.sign(t, ciIdentity, ciIssuer, sigstoretest.SignOptions{NoLog: true}, nil), keyless(t, c.root, ciPolicy, false), "no transparency log entry"},
		{"private without timestamp", c.sign(t, ciIdentity, ciIssuer, sigstoretest.SignOptions{NoLog: true, NoTimestamp: true}, nil),
			keyless(t, c.root, ciPolicy, true), "does not verify against the trusted root"},
		// A root with CT logs demands an SCT, which the virtual Fulcio
		// does not embed.
		{"missing SCT", good, keyless(t, trustedRoot(t, c.authority, sigstoretest.RootOptions{CTLogs: true}), ciPolicy, false), "signed certificate timestamp"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := signing.VerifySignature(tc.d, "keyless", tc.k)
			mustRefuse(t, err, tc.want)
		})
	}
	t.Run("tampered descriptor is a digest mismatch", func(t *testing.T) {
		_, err := signing.VerifySignature(edit(t, good, "tag: image.tag", "tag: image.version"), "keyless", keyless(t, c.root, ciPolicy, false))
		if !errors.Is(err, errdef.ErrDigestMismatch) {
			t.Errorf("want ErrDigestMismatch, got %v", err)
		}
	})
	t.Run("RSA key for a keyless signature", func(t *testing.T) {
		_, err := signing.VerifySignature(good, "keyless", v2Key(t, "rsa.pub.pem"))
		mustRefuse(t, err, "needs a Sigstore trusted root and a certificate identity and OIDC issuer")
	})
}

// Private infrastructure: no log, a signed timestamp instead.
func TestKeylessPrivateInfrastructure(t *testing.T) {
	c := newKeylessCase(t)
	d := c.sign(t, ciIdentity, ciIssuer, sigstoretest.SignOptions{NoLog: true}, nil)
	noLogs := trustedRoot(t, c.authority, sigstoretest.RootOptions{NoTransparencyLogs: true})
	res, err := signing.VerifySignature(d, "keyless", keyless(t, noLogs, ciPolicy, true))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Signer, "timestamped ") {
		t.Errorf("signer %q: want the timestamp", res.Signer)
	}
	// The same signature is refused where the log is required.
	_, err = signing.VerifySignature(d, "keyless", keyless(t, c.root, ciPolicy, false))
	mustRefuse(t, err, "no transparency log entry")
}

// Hostile signature values: each one bounded line, nothing verified, bounded
// in time and in memory.
func TestKeylessHostileBundles(t *testing.T) {
	c := newKeylessCase(t)
	good := c.sign(t, ciIdentity, ciIssuer, sigstoretest.SignOptions{}, nil)
	k := keyless(t, c.root, ciPolicy, false)
	value := func(d *ocm.Descriptor) string {
		for _, s := range d.Signatures {
			if s.Name == "keyless" {
				return s.Signature.Value
			}
		}
		t.Fatal("no keyless signature")
		return ""
	}
	bundleJSON, err := base64.StdEncoding.DecodeString(value(good))
	if err != nil {
		t.Fatal(err)
	}
	mutate := func(f func(m map[string]any)) string {
		var m map[string]any
		if err := json.Unmarshal(bundleJSON, &m); err != nil {
			t.Fatal(err)
		}
		f(m)
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return base64.StdEncoding.EncodeToString(b)
	}
	for _, tc := range []struct{ name, value, want string }{
		{"huge", strings.Repeat("A", 1<<20), "more than a 262144-byte bundle"},
		{"not base64", "not base64 at all!", "not base64"},
		{"not JSON", base64.StdEncoding.EncodeToString([]byte("{{{{")), "not a Sigstore bundle"},
		{"deeply nested", base64.StdEncoding.EncodeToString([]byte(strings.Repeat("[", 100000))), "not a Sigstore bundle"},
		{"unknown bundle version", mutate(func(m map[string]any) { m["mediaType"] = "application/vnd.dev.sigstore.bundle.v0.9+json" }), "not a Sigstore bundle"},
		{"DSSE envelope", mutate(func(m map[string]any) {
			delete(m, "messageSignature")
			m["dsseEnvelope"] = map[string]any{"payload": "e30=", "payloadType": "application/vnd.in-toto+json", "signatures": []any{map[string]any{"sig": "AA=="}}}
		}), "DSSE envelope"},
		{"public key", mutate(func(m map[string]any) {
			vm := m["verificationMaterial"].(map[string]any)
			delete(vm, "certificate")
			vm["publicKey"] = map[string]any{"hint": "attacker"}
		}), "signed with a key, not keyless"},
		{"garbage certificate", mutate(func(m map[string]any) {
			m["verificationMaterial"].(map[string]any)["certificate"] = map[string]any{"rawBytes": "AAAA"}
		}), "bundle verification material"},
		{"signature flipped", mutate(func(m map[string]any) {
			ms := m["messageSignature"].(map[string]any)
			sig, _ := base64.StdEncoding.DecodeString(ms["signature"].(string))
			sig[len(sig)-1] ^= 1
			ms["signature"] = base64.StdEncoding.EncodeToString(sig)
		}), "does not verify against the trusted root"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := edit(t, good, value(good), tc.value)
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			start := time.Now()
			var err error
			cpu := testutil.CPUTime(func() { _, err = signing.VerifySignature(d, "keyless", k) })
			el := time.Since(start)
			runtime.ReadMemStats(&after)
			mustRefuse(t, err, tc.want)
			// Time: the CPU the refusal used, not the wall clock, which a
			// loaded machine stretches.
			if cpu > 5*time.Second {
				t.Errorf("refusal used %v of CPU", cpu)
			}
			// Memory: in proportion to what was read, never amplified by
			// the value. The descriptor is decoded again for its digest
			// (about 12 bytes per byte of YAML; ocm.MaxDescriptorSize caps
			// it), and no bundle is read past signing.MaxBundleSize.
			bound := 24 * uint64(max(len(d.Raw), signing.MaxBundleSize))
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > bound {
				t.Errorf("refusal allocated %d KiB, more than %d KiB for a %d KiB descriptor", alloc>>10, bound>>10, len(d.Raw)>>10)
			} else {
				t.Logf("refused in %v (CPU %v), %d KiB allocated", el.Round(time.Microsecond), cpu.Round(time.Microsecond), alloc>>10)
			}
		})
	}
}

func TestKeylessConfigurationRefusals(t *testing.T) {
	c := newKeylessCase(t)
	for _, tc := range []struct {
		name    string
		root    *signing.TrustedRoot
		id      signing.Identity
		private bool
		want    string
	}{
		{"no issuer", c.root, signing.Identity{Subject: ciIdentity}, false, "needs a certificate identity (or identity regexp) and an OIDC issuer"},
		{"no identity", c.root, signing.Identity{Issuer: ciIssuer}, false, "needs a certificate identity"},
		{"bad regexp", c.root, signing.Identity{SubjectRegexp: "(", Issuer: ciIssuer}, false, "certificate identity regexp"},
		{"root without log keys", trustedRoot(t, c.authority, sigstoretest.RootOptions{NoTransparencyLogs: true}), ciPolicy, false, "trusted root lists no transparency log"},
		{"private root without TSA", trustedRoot(t, c.authority, sigstoretest.RootOptions{NoTimestampAuthorities: true}), ciPolicy, true, "needs a timestamp authority"},
		{"no root", nil, ciPolicy, false, "needs a trusted root"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := signing.NewKeyless(tc.root, tc.id, tc.private)
			if err == nil || !errors.Is(err, errdef.ErrInvalidInput) || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("got %v, want one line of ErrInvalidInput saying %q", err, tc.want)
			}
		})
	}
	for _, tc := range []struct{ name, json, want string }{
		{"garbage", "not json", "trusted root:"},
		{"huge", `{"mediaType":"` + strings.Repeat("x", signing.MaxTrustedRootSize) + `"}`, "more than"},
		{"no CA", `{"mediaType":"application/vnd.dev.sigstore.trustedroot+json;version=0.1"}`, "no certificate authority"},
	} {
		t.Run("root "+tc.name, func(t *testing.T) {
			_, err := signing.ParseTrustedRoot([]byte(tc.json))
			if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("got %v, want one line saying %q", err, tc.want)
			}
		})
	}
}

// Formats OCM has and this plugin does not verify are refused by name.
func TestKeylessUnsupportedFormats(t *testing.T) {
	c := newKeylessCase(t)
	good := c.sign(t, ciIdentity, ciIssuer, sigstoretest.SignOptions{}, nil)
	k := keyless(t, c.root, ciPolicy, false)
	older := edit(t, edit(t, good, "algorithm: "+signing.SigstoreV1Alpha1, "algorithm: sigstore"), "mediaType: "+signing.MediaTypeSigstoreBundle, "mediaType: application/vnd.ocm.signature.sigstore")
	_, err := signing.VerifySignature(older, "keyless", k)
	mustRefuse(t, err, `algorithm "sigstore" (media type "application/vnd.ocm.signature.sigstore") is an older OCM sigstore format`)
	for _, tc := range []struct{ name, old, new, want string }{
		{"Sigstore/v1alpha1 with another media type", "mediaType: " + signing.MediaTypeSigstoreBundle, "mediaType: application/json", `media type "application/json" is not supported for Sigstore/v1alpha1`},
		{"Notation", "algorithm: " + signing.SigstoreV1Alpha1, "algorithm: " + signing.NotationV1Alpha1, `"Notation/v1alpha1" is not verified yet: no released OCM CLI writes Notation signatures; support is planned`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := signing.VerifySignature(edit(t, good, tc.old, tc.new), "keyless", k)
			mustRefuse(t, err, tc.want)
		})
	}
}

// The committed fixtures verify at any later date: certificates are checked
// at the time the log (or timestamp authority) observed the signature.
func TestKeylessCommittedFixtures(t *testing.T) {
	if *updateKeyless {
		writeKeylessFixtures(t)
	}
	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join(keylessDir, name))
		if err != nil {
			t.Fatalf("%v (make them with go test ./signing -run TestKeylessCommittedFixtures -update-keyless)", err)
		}
		return b
	}
	parse := func(name string) *signing.TrustedRoot {
		r, err := signing.ParseTrustedRoot(read(name))
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	d := decode(t, read("helm-dir_1.0.0.yaml"))
	if _, err := signing.VerifySignature(d, "fx-keyless", keyless(t, parse("trusted_root.json"), ciPolicy, false)); err != nil {
		t.Errorf("fx-keyless: %v", err)
	}
	if _, err := signing.VerifySignature(d, "fx-keyless-private", keyless(t, parse("private_trusted_root.json"), ciPolicy, true)); err != nil {
		t.Errorf("fx-keyless-private: %v", err)
	}
	_, err := signing.VerifySignature(d, "fx-keyless", keyless(t, parse("other_trusted_root.json"), ciPolicy, false))
	if err == nil || !strings.Contains(err.Error(), "does not verify against the trusted root") {
		t.Errorf("fx-keyless with another authority's root: %v", err)
	}
	// The OCM CLI's own signatures are untouched.
	if _, err := signing.VerifySignature(d, "fx-pss", v2Key(t, "rsa.pub.pem")); err != nil {
		t.Errorf("fx-pss: %v", err)
	}
}

func writeKeylessFixtures(t *testing.T) {
	a, err := sigstoretest.New()
	if err != nil {
		t.Fatal(err)
	}
	other, err := sigstoretest.New()
	if err != nil {
		t.Fatal(err)
	}
	raw := v2DescriptorBytes(t, "ctf__helm-dir_1.0.0.yaml")
	for _, s := range []struct {
		name string
		o    sigstoretest.SignOptions
	}{{"fx-keyless", sigstoretest.SignOptions{}}, {"fx-keyless-private", sigstoretest.SignOptions{NoLog: true}}} {
		raw, err = sigstoretest.SignDescriptor(raw, s.name, func(artifact []byte) ([]byte, error) { return a.Sign(ciIdentity, ciIssuer, artifact, s.o) })
		if err != nil {
			t.Fatal(err)
		}
	}
	files := map[string][]byte{"helm-dir_1.0.0.yaml": raw}
	// A small component version in a CTF, for the command line and the
	// live Argo CD suite.
	manifests, err := ocmbuild.TarFiles(map[string][]byte{"configmap.yaml": []byte(keylessConfigMap)}, true)
	if err != nil {
		t.Fatal(err)
	}
	hello := &ocmbuild.Component{Name: KeylessComponent, Version: "1.0.0", Provider: "example.com",
		Resources: []ocmbuild.Resource{{Name: "manifests", Type: "directoryTree", Data: manifests, MediaType: ocmbuild.MediaTypeTgz}}}
	if err := a.SignComponent(hello, "release", ciIdentity, ciIssuer, sigstoretest.SignOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(keylessDir, "ctf")); err != nil {
		t.Fatal(err)
	}
	if err := ocmbuild.WriteCTF(filepath.Join(keylessDir, "ctf"), hello); err != nil {
		t.Fatal(err)
	}
	for name, r := range map[string]struct {
		a *sigstoretest.Authority
		o sigstoretest.RootOptions
	}{"trusted_root.json": {a, sigstoretest.RootOptions{}}, "private_trusted_root.json": {a, sigstoretest.RootOptions{NoTransparencyLogs: true}},
		"other_trusted_root.json": {other, sigstoretest.RootOptions{}}} {
		b, err := r.a.TrustedRoot(r.o)
		if err != nil {
			t.Fatal(err)
		}
		files[name] = b
	}
	if err := os.MkdirAll(keylessDir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(keylessDir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// BenchmarkKeylessVerify: one keyless signature of the committed fixture,
// trusted root parsed once (as the engine keeps it).
func BenchmarkKeylessVerify(b *testing.B) {
	raw, err := os.ReadFile(filepath.Join(keylessDir, "trusted_root.json"))
	if err != nil {
		b.Fatal(err)
	}
	r, err := signing.ParseTrustedRoot(raw)
	if err != nil {
		b.Fatal(err)
	}
	dr, err := os.ReadFile(filepath.Join(keylessDir, "helm-dir_1.0.0.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	d := decode(b, dr)
	k := keyless(b, r, ciPolicy, false)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := signing.VerifySignature(d, "fx-keyless", k); err != nil {
			b.Fatal(err)
		}
	}
}

// FuzzKeylessBundle: whatever a signature value holds, verification ends
// with a verdict, never a panic, and a refusal is one bounded line. Seeds:
// the committed fixture's bundles.
func FuzzKeylessBundle(f *testing.F) {
	raw, err := os.ReadFile(filepath.Join(keylessDir, "trusted_root.json"))
	if err != nil {
		f.Fatal(err)
	}
	r, err := signing.ParseTrustedRoot(raw)
	if err != nil {
		f.Fatal(err)
	}
	dr, err := os.ReadFile(filepath.Join(keylessDir, "helm-dir_1.0.0.yaml"))
	if err != nil {
		f.Fatal(err)
	}
	d := decode(f, dr)
	for _, s := range d.Signatures {
		if s.Signature.MediaType == signing.MediaTypeSigstoreBundle {
			b, err := base64.StdEncoding.DecodeString(s.Signature.Value)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(b)
		}
	}
	f.Add([]byte(`{"mediaType":"application/vnd.dev.sigstore.bundle.v0.3+json"}`))
	k := keyless(f, r, ciPolicy, false)
	artifact := make([]byte, 32)
	f.Fuzz(func(t *testing.T, bundle []byte) {
		_, err := k.Verify(base64.StdEncoding.EncodeToString(bundle), artifact)
		if err != nil && (strings.Contains(err.Error(), "\n") || len(err.Error()) > 2000) {
			t.Fatalf("refusal is not one bounded line: %q", err)
		}
	})
}
