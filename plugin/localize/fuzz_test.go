package localize_test

import (
	"strings"
	"testing"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/plugin/localize"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/plugin/registry"
)

// FuzzParseRef: an image reference either parses into a Ref that survives a
// round trip through String, with a registry, a valid repository and no
// whitespace, or is refused (Ref zero). Where the registry client's parser
// (registry.ParseReference, which fetches what localisation points at) also
// accepts the input, both must read the same image: otherwise a rewritten
// workload could name a different image than the one the plugin resolved.
func FuzzParseRef(f *testing.F) {
	dg := "sha256:" + strings.Repeat("ab", 32)
	for _, s := range []string{
		"ghcr.io/stefanprodan/podinfo:6.7.0",
		"registry.internal.example:5000/mirror/stefanprodan/podinfo:6.7.0",
		"ghcr.io/a/b:1.0@" + dg,
		"localhost:5000/a:1",
		"nginx",
		"redis:7.4",
		"bitnami/redis:7.4",
		"index.docker.io/library/redis",
		"http://127.0.0.1:5078/ocm/x/y:0.1.0@" + dg,
		"[::1]:5000/a:1",
		"oci://ghcr.io/a/b",
		"Ghcr.io/A/b",
		"ghcr.io//a",
		"ghcr.io/a:b:c",
		"",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := localize.ParseRef(s)
		if err != nil {
			if r != (localize.Ref{}) {
				t.Fatalf("%q: %+v returned with an error", s, r)
			}
			return
		}
		if r.Registry == "" || r.Repository == "" || strings.ContainsAny(r.String(), " \t\r\n\x00") {
			t.Fatalf("%q parsed into %+v", s, r)
		}
		r2, err := localize.ParseRef(r.String())
		if err != nil || r2 != r {
			t.Fatalf("%q -> %+v -> %q -> %+v, %v", s, r, r.String(), r2, err)
		}
		rr, err := registry.ParseReference(s)
		if err != nil {
			return
		}
		reg := rr.Registry
		if reg == "index.docker.io" || reg == "registry-1.docker.io" {
			reg = localize.DefaultRegistry
		}
		if reg != r.Registry || rr.Repository != r.Repository || rr.Tag != r.Tag || rr.Digest != r.Digest {
			t.Fatalf("%q: localize reads %+v, the registry client %+v", s, r, rr)
		}
	})
}
