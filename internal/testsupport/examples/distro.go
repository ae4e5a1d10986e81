package examples

import (
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/ocmbuild"
)

// Components of the example distro: an internal developer platform packaged as
// one platform component that references its packages.
const (
	Distro        = "example.com/distro/idp"
	DistroShop    = "example.com/distro/shop"    // Helm chart with a pre-install migration Job (PreSync in Argo CD)
	DistroWidgets = "example.com/distro/widgets" // plain manifests: a CRD and a CR of it
	DistroCore    = "example.com/distro/core"    // a nested platform
)

// DistroComponents returns the distro: idp references shop, widgets and core;
// core (itself a platform) references podinfo-extras (a kustomization).
func DistroComponents(root string) ([]*ocmbuild.Component, error) {
	demo, err := Demo(root)
	if err != nil {
		return nil, err
	}
	var catalog, extras *ocmbuild.Component
	for _, c := range demo {
		switch c.Name {
		case Catalog:
			catalog = c
		case Extras:
			extras = c
		}
	}
	widgets, err := manifestsTar(root, "widgets", false)
	if err != nil {
		return nil, err
	}
	shop := *catalog
	shop.Name, shop.Version, shop.V3 = DistroShop, "2.3.0", false
	return []*ocmbuild.Component{
		{
			Name: Distro, Version: "1.0.0", Provider: "example.com",
			References: []ocmbuild.Reference{
				{Name: "shop", ComponentName: DistroShop, Version: "2.3.0"},
				{Name: "widgets", ComponentName: DistroWidgets, Version: "1.0.0"},
				{Name: "core", ComponentName: DistroCore, Version: "1.0.0"},
			},
		},
		&shop,
		{
			Name: DistroWidgets, Version: "1.0.0", Provider: "example.com",
			Resources: []ocmbuild.Resource{{Name: "manifests", Type: "directoryTree", Data: widgets, MediaType: ocmbuild.MediaTypeTar}},
		},
		{
			Name: DistroCore, Version: "1.0.0", Provider: "example.com",
			References: []ocmbuild.Reference{{Name: "extras", ComponentName: Extras, Version: "1.0.0"}},
		},
		extras,
	}, nil
}
