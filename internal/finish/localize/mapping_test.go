package localize_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/finish/localize"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/ocm"
)

// Every field combination of both tools' mapping semantics, against the
// values their code produces:
//   - OCMCLI: ocm api/ocm/ocmutils/localize/format.go (ImageMapping.Evaluate:
//     repository = reference before the tag, tag = what follows it, image =
//     the reference) and localize_test.go ("uses multiple resolved image ref
//     data": ghcr.io/mandelsoft/test:v1 → repository ghcr.io/mandelsoft/test,
//     tag v1). The library splits at the first colon, which breaks hosts with
//     ports and digest-only references; these rows follow its intent instead
//     (the port stays in the repository, a digest-only reference gives the
//     digest as tag). registry is ours: with it, repository is the path only.
//   - OCMController: ocm-controller controllers/mutation_reconcile_looper.go
//     (createSubstitutionRulesForLocalization) with go-containerregistry
//     name.ParseReference: registry = Registry.Name() (index.docker.io for
//     Docker Hub), repository = RepositoryStr() (path only), image = Name()
//     (a digest drops the tag), tag = Identifier() (the digest when there is
//     one, "latest" when there is neither).
//
// Deliberate difference from both (image): a reference that pins no digest
// is pinned by the resource digest when the component declares one.
func TestMappingSemantics(t *testing.T) {
	const host = "registry.example.org:5000"
	resDigest := &ocm.Digest{HashAlgorithm: "SHA-256", NormalisationAlgorithm: "ociArtifactDigest/v1", Value: strings.Repeat("c", 64)}
	all := localize.Mapping{Image: "image", Repository: "repository", Registry: "registry", Tag: "tag", Digest: "digest"}
	noRegistry := localize.Mapping{Image: "image", Repository: "repository", Tag: "tag"}
	noDigest := localize.Mapping{Image: "image", Repository: "repository", Registry: "registry", Tag: "tag"}
	for _, tc := range []struct {
		name string
		ref  string
		dg   *ocm.Digest
		m    localize.Mapping
		sem  localize.Semantics
		want map[string]string // path → value; absent: not set
	}{
		// OCM CLI, repository without registry: host/path.
		{"cli tag", "ghcr.io/mandelsoft/test:v1", nil, noRegistry, localize.OCMCLI,
			map[string]string{"image": "ghcr.io/mandelsoft/test:v1", "repository": "ghcr.io/mandelsoft/test", "tag": "v1"}},
		{"cli port tag", host + "/shop/webshop:1.4.2", nil, noRegistry, localize.OCMCLI,
			map[string]string{"image": host + "/shop/webshop:1.4.2", "repository": host + "/shop/webshop", "tag": "1.4.2"}},
		{"cli digest only", host + "/shop/webshop@" + digest, nil, noRegistry, localize.OCMCLI,
			map[string]string{"image": host + "/shop/webshop@" + digest, "repository": host + "/shop/webshop", "tag": digest}},
		{"cli tag@digest", host + "/shop/webshop:1.4.2@" + digest, nil, noRegistry, localize.OCMCLI,
			map[string]string{"image": host + "/shop/webshop:1.4.2@" + digest, "repository": host + "/shop/webshop", "tag": "1.4.2@" + digest}},
		{"cli tag, resource digest", "ghcr.io/a/b:1.0", resDigest, noRegistry, localize.OCMCLI,
			map[string]string{"image": "ghcr.io/a/b:1.0@" + digest, "repository": "ghcr.io/a/b", "tag": "1.0"}},
		{"cli neither, resource digest", "ghcr.io/a/b", resDigest, noRegistry, localize.OCMCLI,
			map[string]string{"image": "ghcr.io/a/b@" + digest, "repository": "ghcr.io/a/b", "tag": digest}},
		// OCM CLI with registry: repository loses the host (no doubled host).
		{"cli registry+repository digest only", host + "/shop/webshop@" + digest, nil, all, localize.OCMCLI,
			map[string]string{"image": host + "/shop/webshop@" + digest, "repository": "shop/webshop", "registry": host, "tag": digest, "digest": digest}},
		{"cli registry+repository tag", "ghcr.io/a/b:1.0", resDigest, all, localize.OCMCLI,
			map[string]string{"image": "ghcr.io/a/b:1.0@" + digest, "repository": "a/b", "registry": "ghcr.io", "tag": "1.0", "digest": digest}},
		{"cli registry only", host + "/shop/webshop:1.4.2", nil, localize.Mapping{Registry: "registry"}, localize.OCMCLI,
			map[string]string{"registry": host}},
		{"cli docker hub", "nginx:1.25", nil, noDigest, localize.OCMCLI,
			map[string]string{"image": "docker.io/library/nginx:1.25", "repository": "library/nginx", "registry": "docker.io", "tag": "1.25"}},
		// ocm-controller: repository is always the path.
		{"controller tag", "ghcr.io/mandelsoft/test:v1", nil, noDigest, localize.OCMController,
			map[string]string{"image": "ghcr.io/mandelsoft/test:v1", "repository": "mandelsoft/test", "registry": "ghcr.io", "tag": "v1"}},
		{"controller repository only", host + "/shop/webshop:1.4.2", nil, localize.Mapping{Repository: "repository"}, localize.OCMController,
			map[string]string{"repository": "shop/webshop"}},
		{"controller digest only", host + "/shop/webshop@" + digest, nil, all, localize.OCMController,
			map[string]string{"image": host + "/shop/webshop@" + digest, "repository": "shop/webshop", "registry": host, "tag": digest, "digest": digest}},
		{"controller tag@digest", host + "/shop/webshop:1.4.2@" + digest, nil, all, localize.OCMController,
			map[string]string{"image": host + "/shop/webshop@" + digest, "repository": "shop/webshop", "registry": host, "tag": digest, "digest": digest}},
		{"controller neither", "ghcr.io/a/b", nil, localize.Mapping{Image: "image", Tag: "tag"}, localize.OCMController,
			map[string]string{"image": "ghcr.io/a/b:latest", "tag": "latest"}},
		{"controller neither, resource digest", "ghcr.io/a/b", resDigest, localize.Mapping{Image: "image", Tag: "tag"}, localize.OCMController,
			map[string]string{"image": "ghcr.io/a/b@" + digest, "tag": digest}},
		{"controller docker hub", "nginx:1.25", nil, localize.Mapping{Image: "image", Repository: "repository", Registry: "registry"}, localize.OCMController,
			map[string]string{"image": "index.docker.io/library/nginx:1.25", "repository": "library/nginx", "registry": "index.docker.io"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := imageRes("app", "5.4.2", tc.ref, tc.dg)
			img, err := localize.ImageOf(&res)
			if err != nil {
				t.Fatal(err)
			}
			as, err := tc.m.AssignAs(img, tc.sem)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			for _, a := range as {
				got[a.Path.String()] = a.Value
			}
			if len(got) != len(tc.want) {
				t.Errorf("set %v, want %v", got, tc.want)
			}
			for k, v := range tc.want {
				if got[k] != v {
					t.Errorf("%s = %q, want %q", k, got[k], v)
				}
			}
		})
	}
}

func TestMappingRefusals(t *testing.T) {
	// The OCM CLI refuses a reference with neither tag nor digest.
	res := imageRes("x", "1", "ghcr.io/a/b", nil)
	img, _ := localize.ImageOf(&res)
	if _, err := (localize.Mapping{Tag: "t"}).Assign(img); err == nil || !strings.Contains(err.Error(), "neither tag nor digest") {
		t.Errorf("got %v", err)
	}
	// A digest the component does not know cannot be mapped.
	res = imageRes("y", "1", "ghcr.io/a/b:1", nil)
	img, _ = localize.ImageOf(&res)
	for _, sem := range []localize.Semantics{localize.OCMCLI, localize.OCMController} {
		if _, err := (localize.Mapping{Digest: "d"}).AssignAs(img, sem); err == nil || !strings.Contains(err.Error(), "not known") {
			t.Errorf("got %v", err)
		}
	}
	if _, err := (localize.Mapping{Tag: "a..b"}).Assign(img); err == nil {
		t.Error("a bad path was accepted")
	}
}

func TestHint(t *testing.T) {
	res := imageRes("image", "6.7.0", "ghcr.io/a/b:1", nil)
	if _, ok, err := localize.Hint(&res); ok || err != nil {
		t.Fatalf("no label: %v %v", ok, err)
	}
	res.Labels = []ocm.Label{{Name: localize.HintLabel, Value: json.RawMessage(`{"valuesPath": "image"}`)}}
	m, ok, err := localize.Hint(&res)
	if !ok || err != nil || m.Repository != "image.repository" || m.Tag != "image.tag" || m.Image != "" {
		t.Fatalf("%+v %v %v", m, ok, err)
	}
	res.Labels[0].Value = json.RawMessage(`{"image": "app.image"}`)
	if m, _, _ := localize.Hint(&res); m.Image != "app.image" || m.Repository != "" {
		t.Fatalf("%+v", m)
	}
	res.Labels[0].Value = json.RawMessage(`"image"`)
	if _, _, err := localize.Hint(&res); err == nil {
		t.Fatal("a string hint was accepted")
	}
}
