package examples

import (
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/ocmbuild"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/ocm"
)

// The ordering and hooks example (docs/examples/hooks.yaml): the catalog chart
// (a CRD, a custom resource of it and a Helm pre-install migration hook), the
// widgets manifests (a CRD and a custom resource of it) and the chart's two
// images, relocated into a mirror with known digests, as after
// `ocm transfer --copy-resources` into an air-gapped site.
const (
	Hooks = "example.com/demo/ordered-catalog"
	// Digests the mirror knows (made up: the images are never pulled).
	HooksAPIDigest   = "sha256:3b1f0c9d8e7a6b5c4d3e2f1a0b9c8d7e6f5a4b3c2d1e0f9a8b7c6d5e4f3a2b1c"
	HooksCacheDigest = "sha256:7e6f5a4b3c2d1e0f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f1a0b9c8d7e6f"
)

// HooksComponents returns the component of the ordering and hooks example,
// reading sources under root (the repository's testdata/src). Tests build it
// into a temporary CTF; it is not part of the committed test data.
func HooksComponents(root string) ([]*ocmbuild.Component, error) {
	catalogSet, _, err := chart(root, "catalog", "2.3.0", false)
	if err != nil {
		return nil, err
	}
	widgets, err := manifestsTar(root, "widgets", true)
	if err != nil {
		return nil, err
	}
	image := func(name, version, ref, digest string) ocmbuild.Resource {
		return ocmbuild.Resource{Name: name, Type: "ociImage", Version: version, Relation: "external",
			Access: map[string]any{"type": "ociArtifact", "imageReference": ref},
			Digest: &ocm.Digest{HashAlgorithm: "SHA-256", NormalisationAlgorithm: "ociArtifactDigest/v1", Value: digest[len("sha256:"):]}}
	}
	return []*ocmbuild.Component{{
		Name: Hooks, Version: "1.0.0", Provider: "example.com",
		Resources: []ocmbuild.Resource{
			{Name: "chart", Type: "helmChart", Data: catalogSet, MediaType: ocmbuild.MediaTypeArtifactSet},
			{Name: "widgets", Type: "directoryTree", Data: widgets, MediaType: ocmbuild.MediaTypeTgz},
			image("api-image", "2.3.0", MirrorRegistry+"/mirror/catalog/api:2.3.0", HooksAPIDigest),
			image("cache-image", "7.4", MirrorRegistry+"/mirror/library/redis:7.4", HooksCacheDigest),
		},
	}}, nil
}
