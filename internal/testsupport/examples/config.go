package examples

import (
	"os"
	"path/filepath"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/ocmbuild"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/ocm"
)

// Components of the configuration and localisation examples. Their images
// live in a mirror registry with a port, as after
// `ocm transfer --copy-resources` into an air-gapped environment.
const (
	// PodinfoConfigured is the OCM CLI fixture's podinfo-mini chart with its
	// image relocated (localization-hint label {valuesPath: image}) and a
	// helmValues config resource.
	PodinfoConfigured = "example.com/config/podinfo-configured"
	// Backend is ocm-controller's e2e backend: a kustomization, its ConfigData
	// (configuration rules and localization) and its relocated image.
	Backend = "example.com/config/backend"
	// Shop is a chart with two images of its own and one foreign sidecar,
	// shipping its deployment definition (docs/examples/shop.yaml).
	Shop = "example.com/config/shop"

	MirrorRegistry = "registry.internal.example:5000"
	// Digests the mirror knows (made up: the images are never pulled).
	BackendImageDigest = "sha256:0c9e4b7f3a2d1e6f5a4b3c2d1e0f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f"
	ShopAPIDigest      = "sha256:5f0c7b2e9d8a6b4c3e1f0a9b8c7d6e5f4a3b2c1d0e9f8a7b6c5d4e3f2a1b0c9d"
	ShopWorkerDigest   = "sha256:9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f1a0b9c8d7e6f5a4b3c2d1e0f9a8b"
)

// ConfigDemo returns the component versions of the configuration examples.
// fixtures is the OCM CLI fixture directory (testdata/ocm-cli) and
// root the repository root (for testdata/config and docs/examples).
func ConfigDemo(fixtures, root string) ([]*ocmbuild.Component, error) {
	podinfo, err := podinfoConfiguredComponent(fixtures)
	if err != nil {
		return nil, err
	}
	backend, err := backendComponent(fixtures)
	if err != nil {
		return nil, err
	}
	shop, err := shopComponent(root)
	if err != nil {
		return nil, err
	}
	return []*ocmbuild.Component{podinfo, backend, shop}, nil
}

// readFile reads the file the path elements name.
func readFile(elem ...string) ([]byte, error) { return os.ReadFile(filepath.Join(elem...)) }

// mirrorImage is an external ociImage resource at ref (in the mirror).
func mirrorImage(name, version, ref string) ocmbuild.Resource {
	return ocmbuild.Resource{Name: name, Type: "ociImage", Version: version, Relation: "external",
		Access: map[string]any{"type": "ociArtifact", "imageReference": ref}}
}

// manifestDigest is the resource digest of an image manifest of digest d.
func manifestDigest(d string) *ocm.Digest {
	return &ocm.Digest{HashAlgorithm: "SHA-256", NormalisationAlgorithm: "ociArtifactDigest/v1", Value: d[len("sha256:"):]}
}

// podinfoConfiguredComponent is PodinfoConfigured, from the fixture's chart.
func podinfoConfiguredComponent(fixtures string) (*ocmbuild.Component, error) {
	podinfoTgz, err := readFile(fixtures, "inputs", "podinfo-mini-0.1.0.tgz")
	if err != nil {
		return nil, err
	}
	podinfoSet, err := ocmbuild.ChartArtifactSet(podinfoTgz, "0.1.0", false)
	if err != nil {
		return nil, err
	}
	podinfoImage := mirrorImage("image", "6.7.0", MirrorRegistry+"/mirror/stefanprodan/podinfo:6.7.0")
	podinfoImage.Labels = []ocmbuild.Label{{Name: "localization-hint", Value: map[string]any{"valuesPath": "image"}, Signing: true}}
	return &ocmbuild.Component{
		Name: PodinfoConfigured, Version: "1.0.0", Provider: "example.com",
		Resources: []ocmbuild.Resource{
			{Name: "chart", Type: "helmChart", Data: podinfoSet, MediaType: ocmbuild.MediaTypeArtifactSet,
				ReferenceName: PodinfoConfigured + "/podinfo-mini:0.1.0"},
			podinfoImage,
			{Name: "config", Type: "helmValues", MediaType: ocmbuild.MediaTypeYAML,
				Data: []byte("replicaCount: 2\nui:\n  message: hello from the relocated registry\n")},
		},
	}, nil
}

// backendComponent is Backend, from ocm-controller's e2e test data.
func backendComponent(fixtures string) (*ocmbuild.Component, error) {
	backendTgz, err := readFile(fixtures, "upstream-testdata", "ocm-controller-v1-configdata", "backend-manifests.tar.gz")
	if err != nil {
		return nil, err
	}
	backendConfig, err := readFile(fixtures, "upstream-testdata", "ocm-controller-v1-configdata", "backend-config.yaml")
	if err != nil {
		return nil, err
	}
	backendImage := mirrorImage("image", "6.2.3", MirrorRegistry+"/mirror/stefanprodan/podinfo:6.2.3")
	backendImage.Digest = manifestDigest(BackendImageDigest)
	return &ocmbuild.Component{
		Name: Backend, Version: "1.0.0", Provider: "example.com",
		Resources: []ocmbuild.Resource{
			{Name: "manifests", Type: "directoryTree", Data: backendTgz, MediaType: ocmbuild.MediaTypeTgz},
			backendImage,
			{Name: "config", Type: "configData", Data: backendConfig, MediaType: ocmbuild.MediaTypeYAML},
		},
	}, nil
}

// shopComponent is Shop, its chart packaged from testdata/config/charts/shop.
func shopComponent(root string) (*ocmbuild.Component, error) {
	shopFiles, err := ocmbuild.ReadDir(filepath.Join(root, "testdata", "config", "charts", "shop"))
	if err != nil {
		return nil, err
	}
	shopChart, err := ocmbuild.PackageChart(shopFiles)
	if err != nil {
		return nil, err
	}
	shopSet, err := ocmbuild.ChartArtifactSet(shopChart, "0.1.0", false)
	if err != nil {
		return nil, err
	}
	shopDefinition, err := readFile(root, "docs", "examples", "shop.yaml")
	if err != nil {
		return nil, err
	}
	shopWorker := mirrorImage("worker-image", "1.4.2", MirrorRegistry+"/mirror/example/shop-worker:1.4.2")
	shopWorker.Digest = manifestDigest(ShopWorkerDigest)
	return &ocmbuild.Component{
		Name: Shop, Version: "1.0.0", Provider: "example.com",
		Labels: []ocmbuild.Label{{Name: "release-channel", Value: "stable", Signing: true}},
		Resources: []ocmbuild.Resource{
			{Name: "chart", Type: "helmChart", Data: shopSet, MediaType: ocmbuild.MediaTypeArtifactSet},
			mirrorImage("api-image", "1.4.2", MirrorRegistry+"/mirror/example/shop-api:1.4.2@"+ShopAPIDigest),
			shopWorker,
			{Name: "config", Type: "helmValues", MediaType: ocmbuild.MediaTypeYAML,
				Data: []byte("database:\n  host: shop-db.shop.svc\nworker:\n  schedule: \"*/5 * * * *\"\n")},
			{Name: "deployment", Type: "deploymentDefinition", MediaType: ocmbuild.MediaTypeYAML, Data: shopDefinition},
		},
	}, nil
}
