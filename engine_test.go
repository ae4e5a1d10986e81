package argocdocm_test

import (
	"context"
	"crypto/rsa"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/examples"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/registrytest"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/policy"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/signing"
)

// The generations of a sharing engine (a render-server worker) resolve a
// tag once within its time to live; those of a plain engine (a command)
// each ask the registry again. Either way each generation has a client of
// its own.
func TestEngineSharesTagResolutionsOnlyWhenAsked(t *testing.T) {
	reg := demoRegistry(t)
	req := argocdocm.Request{Repository: "http://" + reg.Host + "/ocm", Component: examples.Podinfo, Version: "1.0.0"}
	tagGETs := func() int {
		return reg.Count(func(q registrytest.Request) bool {
			return strings.Contains(q.Path, "/manifests/") && !strings.Contains(q.Path, "sha256:")
		})
	}
	for _, tc := range []struct {
		name string
		opts []argocdocm.EngineOption
		want int // tag requests of the 3 generations after the first
	}{
		{"command", nil, 3},
		{"server", []argocdocm.EngineOption{argocdocm.WithSharing(time.Minute)}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := argocdocm.NewEngine(append(tc.opts, argocdocm.WithBlobCacheDir(t.TempDir()), argocdocm.WithAllowedAddresses("127.0.0.1"))...)
			render := func() {
				r, err := e.Renderer(argocdocm.Generation{})
				if err != nil {
					t.Fatal(err)
				}
				if _, err := r.Render(context.Background(), req); err != nil {
					t.Fatal(err)
				}
			}
			render()
			reg.Reset()
			for range 3 {
				render()
			}
			if got := tagGETs(); got != tc.want {
				t.Errorf("%d tag requests by 3 generations, want %d", got, tc.want)
			}
		})
	}
}

// A generation's rule gates its registry client before any connection.
func TestEngineRendererFollowsTheRule(t *testing.T) {
	reg := registrytest.Start(t)
	e := argocdocm.NewEngine(argocdocm.WithBlobCacheDir(""))
	r, err := e.Renderer(argocdocm.Generation{Rule: policyRule(t, e, "registry.example.com")})
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.Render(context.Background(), argocdocm.Request{Repository: "http://" + reg.Host + "/ocm", Component: examples.Podinfo, Version: "1.0.0"})
	if !errors.Is(err, errdef.ErrForbidden) {
		t.Fatalf("want a refusal by the policy, got %v", err)
	}
	if n := reg.Count(nil); n != 0 {
		t.Errorf("%d requests reached the registry", n)
	}
}

// verifierOf is the verifier e builds for a generation whose signatures
// are names with keys and roots (Engine.Renderer, through Generation.Person).
func verifierOf(e *argocdocm.Engine, names, keys, roots []string) (*signing.Verifier, error) {
	r, err := e.Renderer(argocdocm.Generation{Person: &argocdocm.Person{Signatures: argocdocm.Signatures{Names: names, PublicKeys: keys, RootCAs: roots}}})
	if err != nil {
		return nil, err
	}
	return r.Verifier(), nil
}

// Keys are read every time (a rotated key applies at once) and parsed
// again only when the file changed.
func TestEngineVerifier(t *testing.T) {
	e := argocdocm.NewEngine(argocdocm.WithBlobCacheDir(""))
	if v, err := verifierOf(e, nil, nil, nil); v != nil || err != nil {
		t.Fatalf("no signatures: %v, %v", v, err)
	}
	for _, tc := range []struct{ names, keys []string }{
		{[]string{"acme"}, nil},
		{nil, []string{"k.pem"}},
		{[]string{"a", "b", "c"}, []string{"1.pem", "2.pem"}},
	} {
		if _, err := verifierOf(e, tc.names, tc.keys, nil); !errors.Is(err, errdef.ErrInvalidInput) {
			t.Errorf("%v / %v: %v", tc.names, tc.keys, err)
		}
	}
	if _, err := verifierOf(e, []string{"acme"}, []string{filepath.Join(t.TempDir(), "missing.pem")}, nil); !errors.Is(err, errdef.ErrInvalidInput) {
		t.Errorf("missing key file: %v", err)
	}
}

// Root CA files: alone, beside a key, per name; a leaf is no root.
func TestEngineVerifierRootCA(t *testing.T) {
	keys := filepath.Join("testdata", "ocm-cli-v2", "signatures", "keys")
	ca, leaf, rsaKey, gpg := filepath.Join(keys, "ca.crt"), filepath.Join(keys, "leaf.crt"), filepath.Join(keys, "rsa.pub.pem"), filepath.Join(keys, "gpg.pub.asc")
	e := argocdocm.NewEngine(argocdocm.WithBlobCacheDir(""))
	v, err := verifierOf(e, []string{"fx-pem"}, nil, []string{ca})
	if err != nil {
		t.Fatal(err)
	}
	if tr, ok := v.Keys["fx-pem"].(*signing.Trust); !ok || tr.Key != nil || tr.Roots == nil {
		t.Errorf("root only: %#v", v.Keys["fx-pem"])
	}
	v, err = verifierOf(e, []string{"fx-pss", "fx-pem", "fx-gpg"}, []string{rsaKey, "", gpg}, []string{"", ca, ""})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := v.Keys["fx-pss"].(*rsa.PublicKey); !ok {
		t.Errorf("fx-pss: %T", v.Keys["fx-pss"])
	}
	if _, ok := v.Keys["fx-gpg"].(*signing.OpenPGPKeys); !ok {
		t.Errorf("fx-gpg: %T", v.Keys["fx-gpg"])
	}
	if _, err := verifierOf(e, []string{"fx-pem"}, nil, []string{leaf}); !errors.Is(err, errdef.ErrInvalidInput) || !strings.Contains(err.Error(), "not a CA certificate") {
		t.Errorf("leaf as root CA: %v", err)
	}
	if _, err := verifierOf(e, []string{"a", "b"}, []string{rsaKey, ""}, nil); !errors.Is(err, errdef.ErrInvalidInput) {
		t.Errorf("name without key or root: %v", err)
	}
	if _, err := verifierOf(e, []string{"a", "b", "c"}, nil, []string{ca, ca}); !errors.Is(err, errdef.ErrInvalidInput) {
		t.Errorf("two roots for three names: %v", err)
	}
}

// WithBlobCacheDir puts every generation's blobs in its directory, and ""
// caches nothing, not even in the default directory.
func TestEngineBlobCacheDir(t *testing.T) {
	reg := demoRegistry(t)
	req := argocdocm.Request{Repository: "http://" + reg.Host + "/ocm", Component: examples.Podinfo, Version: "1.0.0"}
	defaultDir := t.TempDir()
	t.Setenv("ARGOCD_OCM_CACHE_DIR", defaultDir)
	dir := t.TempDir()
	for _, tc := range []struct {
		name, dir string
	}{
		{"disabled", ""},
		{"dir", dir},
	} {
		r, err := argocdocm.NewEngine(argocdocm.WithBlobCacheDir(tc.dir), argocdocm.WithAllowedAddresses("127.0.0.1")).Renderer(argocdocm.Generation{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.Render(context.Background(), req); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got, want := !isEmptyDir(t, dir), tc.dir != ""; got != want {
			t.Errorf("%s: blobs in the option's directory: %v, want %v", tc.name, got, want)
		}
		if !isEmptyDir(t, defaultDir) {
			t.Errorf("%s: blobs in the default directory", tc.name)
		}
	}
}

// WithPlainHTTP reaches a registry over plain HTTP that a strict rule
// alone would refuse: the program owns that registry, not the Application.
func TestEngineWithPlainHTTP(t *testing.T) {
	reg := demoRegistry(t)
	req := argocdocm.Request{Repository: "http://" + reg.Host + "/ocm", Component: examples.Podinfo, Version: "1.0.0"}
	for _, tc := range []struct {
		name   string
		opts   []argocdocm.EngineOption
		wantOK bool
	}{
		{"rule alone", nil, false},
		{"WithPlainHTTP", []argocdocm.EngineOption{argocdocm.WithPlainHTTP(reg.Host)}, true},
	} {
		e := argocdocm.NewEngine(append(tc.opts, argocdocm.WithBlobCacheDir(""), argocdocm.WithoutDockerConfig())...)
		r, err := e.Renderer(argocdocm.Generation{Rule: policyRule(t, e, reg.Host)})
		if err != nil {
			t.Fatal(err)
		}
		_, err = r.Render(context.Background(), req)
		if (err == nil) != tc.wantOK {
			t.Errorf("%s: %v, want success %v", tc.name, err, tc.wantOK)
		}
	}
}

func isEmptyDir(t *testing.T, dir string) bool {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	return len(entries) == 0
}

// WithArchiveLimits bounds the directoryTree resources of every
// generation; 0 keeps a default, it never switches a limit off.
func TestEngineWithArchiveLimits(t *testing.T) {
	req := argocdocm.Request{Repository: demoCTF(t), Component: examples.Extras, Version: "1.0.0"}
	for _, tc := range []struct {
		name    string
		size    int64
		files   int
		wantErr bool
	}{
		{"defaults", 0, 0, false},
		{"size", 16, 0, true},
		{"files", 0, 1, true},
	} {
		r, err := argocdocm.NewEngine(argocdocm.WithBlobCacheDir(""), argocdocm.WithArchiveLimits(tc.size, tc.files)).Renderer(argocdocm.Generation{})
		if err != nil {
			t.Fatal(err)
		}
		_, err = r.Render(context.Background(), req)
		if tc.wantErr != errors.Is(err, errdef.ErrLimitExceeded) || (!tc.wantErr && err != nil) {
			t.Errorf("%s: %v, want a limit error %v", tc.name, err, tc.wantErr)
		}
	}
}

// demoRegistry serves the demo components under ocm/.
func demoRegistry(t *testing.T) *registrytest.Registry {
	t.Helper()
	comps, err := examples.Demo("testdata/src")
	if err != nil {
		t.Fatal(err)
	}
	reg := registrytest.Start(t)
	reg.Push(t, "ocm", comps...)
	return reg
}

// policyRule is e's rule under a sidecar policy whose default rule allows
// the registry host alone.
func policyRule(t *testing.T, e *argocdocm.Engine, host string) *policy.Rule {
	t.Helper()
	policyFile := filepath.Join(t.TempDir(), "policy.yaml")
	if err := os.WriteFile(policyFile, []byte("apiVersion: argocd-ocm-plugin.io/v1alpha1\nkind: SidecarPolicy\ndefault:\n  repositories: [{host: '"+host+"'}]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rule, err := e.Rule(func(k string) string {
		if k == "ARGOCD_OCM_POLICY" {
			return policyFile
		}
		return ""
	})
	if err != nil {
		t.Fatal(err)
	}
	return rule
}
