// Package examples defines the component versions of the bundled examples and
// test data, built from the sources under testdata/src with ocmbuild. The
// committed CTF in testdata/demo/ctf is their output (`make testdata`); a test
// checks it has not drifted.
package examples

import (
	"path/filepath"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/ocmbuild"
)

// Names of the example components.
const (
	Podinfo  = "example.com/demo/podinfo"
	Catalog  = "example.com/demo/catalog"
	Extras   = "example.com/demo/podinfo-extras"
	Platform = "example.com/demo/platform"

	PodinfoImage = "ghcr.io/stefanprodan/podinfo:6.7.0@sha256:f3ab2fa3e7e4a1f0b9d3f6b7c0d5a3f0c2a6e4b1d9c8e7f6a5b4c3d2e1f0a9b8"
)

// Demo returns the example component versions, reading sources under root
// (the repository's testdata/src).
func Demo(root string) ([]*ocmbuild.Component, error) {
	podinfoSet, podinfoChart, err := chart(root, "podinfo", "6.7.0", false)
	if err != nil {
		return nil, err
	}
	catalogSet, _, err := chart(root, "catalog", "2.3.0", true)
	if err != nil {
		return nil, err
	}
	extrasTgz, err := manifestsTar(root, "podinfo-extras", true)
	if err != nil {
		return nil, err
	}
	image := func(name, ref string) ocmbuild.Resource {
		return ocmbuild.Resource{Name: name, Type: "ociImage", Version: "6.7.0",
			Access: map[string]any{"type": "ociArtifact", "imageReference": ref}}
	}
	return []*ocmbuild.Component{
		{
			Name: Podinfo, Version: "1.0.0", Provider: "example.com",
			Labels: []ocmbuild.Label{{Name: "release-channel", Value: "stable", Signing: true}},
			Resources: []ocmbuild.Resource{
				{Name: "chart", Type: "helmChart", Data: podinfoSet, MediaType: ocmbuild.MediaTypeArtifactSet,
					ReferenceName: Podinfo + "/podinfo:6.7.0"},
				image("image", PodinfoImage),
			},
		},
		{
			// The same chart as a plain chart archive, and a version with build metadata.
			Name: Podinfo, Version: "1.1.0+build.7", Provider: "example.com",
			Resources: []ocmbuild.Resource{
				{Name: "chart", Type: "helmChart", Data: podinfoChart, MediaType: ocmbuild.MediaTypeHelmChart},
				image("image", PodinfoImage),
			},
		},
		{
			Name: Catalog, Version: "2.3.0", Provider: "example.com", V3: true,
			Resources: []ocmbuild.Resource{
				{Name: "chart", Type: "helmChart", Data: catalogSet, MediaType: ocmbuild.MediaTypeArtifactSet},
				{Name: "api-image", Type: "ociImage", Version: "2.3.0",
					Access: map[string]any{"type": "ociArtifact", "imageReference": "registry.example.com/catalog/api:2.3.0"}},
				{Name: "cache-image", Type: "ociImage", Version: "7.4",
					Access: map[string]any{"type": "ociArtifact", "imageReference": "docker.io/library/redis:7.4"}},
			},
		},
		{
			Name: Extras, Version: "1.0.0", Provider: "example.com",
			Resources: []ocmbuild.Resource{
				{Name: "manifests", Type: "directoryTree", Data: extrasTgz, MediaType: ocmbuild.MediaTypeTgz},
			},
		},
		{
			Name: Platform, Version: "1.0.0", Provider: "example.com",
			References: []ocmbuild.Reference{
				{Name: "podinfo", ComponentName: Podinfo, Version: "1.0.0"},
				{Name: "extras", ComponentName: Extras, Version: "1.0.0"},
			},
		},
	}, nil
}

// chart packages testdata/src/charts/<name> and wraps it in an artifact set.
func chart(root, name, tag string, nestedBlobDirs bool) (set, archive []byte, err error) {
	files, err := ocmbuild.ReadDir(filepath.Join(root, "charts", name))
	if err != nil {
		return nil, nil, err
	}
	if archive, err = ocmbuild.PackageChart(files); err != nil {
		return nil, nil, err
	}
	set, err = ocmbuild.ChartArtifactSet(archive, tag, nestedBlobDirs)
	return set, archive, err
}

// manifestsTar packs testdata/src/manifests/<name> as a tar (tgz when gz).
func manifestsTar(root, name string, gz bool) ([]byte, error) {
	files, err := ocmbuild.ReadDir(filepath.Join(root, "manifests", name))
	if err != nil {
		return nil, err
	}
	return ocmbuild.TarFiles(files, gz)
}
