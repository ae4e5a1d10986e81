package imageref_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/blob"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/format/imageref"
)

// FuzzParseReference: every input either parses into a reference that
// validates and survives a round trip through String (and Scheme), or is
// refused with ErrInvalidInput. Seeds: the references the OCM CLI writes
// (transferred charts with scheme, tag and digest), Docker Hub short names,
// and hostile shapes.
func FuzzParseReference(f *testing.F) {
	const dg = "sha256:8cc80185ab75ed0521e3e8f67c77c9a31132e90e7e0ff19c4360db6641eacafa"
	for _, s := range []string{
		"ghcr.io/org/chart:1.0.0",
		"http://127.0.0.1:5078/ocm/example.com/fixtures/podinfo-app/podinfo-mini:0.1.0@" + dg,
		"oci://registry.local:5000/charts/app@" + dg,
		"HTTPS://ghcr.io/a/b:v1",
		"localhost/a",
		"localhost:5000/a/b:c@" + dg,
		"nginx:1.27",
		"nginx@" + dg,
		"index.docker.io/nginx:1",
		"registry-1.docker.io/bitnami/redis",
		"stefanprodan/podinfo:6.7.0",
		"[::1]:5000/a:1",
		"ghcr.io/a/../b:1",
		"user:pass@ghcr.io/a:1",
		"ghcr.io/a@sha512:" + strings.Repeat("ab", 64),
		"ftp://x/y",
		"",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := imageref.Parse(s)
		if err != nil {
			if !errors.Is(err, errdef.ErrInvalidInput) {
				t.Fatalf("%q: error without ErrInvalidInput: %v", s, err)
			}
			if r != (imageref.Reference{}) {
				t.Fatalf("%q: reference %+v returned with an error", s, r)
			}
			return
		}
		if err := r.Validate(); err != nil {
			t.Fatalf("%q parsed into %+v, which does not validate: %v", s, r, err)
		}
		if r.Registry == "" || r.Repository == "" || strings.ContainsAny(r.String(), " \t\r\n\x00") {
			t.Fatalf("%q parsed into %+v", s, r)
		}
		if r.Scheme != "" && r.Scheme != "http" && r.Scheme != "https" {
			t.Fatalf("%q: scheme %q", s, r.Scheme)
		}
		if r.Digest != "" {
			if d, err := blob.Normalize(r.Digest); err != nil || d != r.Digest {
				t.Fatalf("%q: digest %q is not normal (%v)", s, r.Digest, err)
			}
		}
		if r.Ref() == "" && (r.Tag != "" || r.Digest != "") {
			t.Fatalf("%q: Ref() empty for %+v", s, r)
		}
		again := r.String()
		if r.Scheme != "" {
			again = r.Scheme + "://" + again
		}
		r2, err := imageref.Parse(again)
		if err != nil || r2 != r {
			t.Fatalf("%q -> %+v -> %q -> %+v, %v", s, r, again, r2, err)
		}
	})
}

// Found by FuzzParseRef (internal/finish/localize): Docker Hub's aliases were read as
// other registries, so "index.docker.io/nginx" named repository "nginx"
// where localisation (and Docker) read docker.io/library/nginx.
func TestDockerHubAliases(t *testing.T) {
	for in, want := range map[string]string{
		"index.docker.io/nginx:1":            "docker.io/library/nginx:1",
		"registry-1.docker.io/bitnami/redis": "docker.io/bitnami/redis",
		"https://index.docker.io/0":          "docker.io/library/0",
	} {
		r, err := imageref.Parse(in)
		if err != nil || r.String() != want {
			t.Errorf("%s: got %s, %v; want %s", in, r, err, want)
		}
	}
}
