package argocdocm_test

import (
	"context"
	"fmt"
	"log"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin"
)

// A Go program renders a component version as the plugin does: one Engine
// for the process, a request per component version. Here from the CTF
// bundled with the repository; a registry is named the same way
// ("ghcr.io/acme/ocm", "http://127.0.0.1:5000/ocm").
func ExampleEngine_Render() {
	engine := argocdocm.NewEngine(argocdocm.WithBlobCacheDir("")) // a CTF needs no cache
	res, err := engine.Render(context.Background(), argocdocm.Request{
		Repository:  "testdata/demo/ctf",
		Component:   "example.com/demo/podinfo",
		Version:     "1.0.0",
		ReleaseName: "demo",
		Namespace:   "demo",
	}, nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Component, res.Version)
	for _, o := range res.Objects {
		meta := o["metadata"].(map[string]any)
		fmt.Println(o["kind"], meta["name"])
	}
	// Output:
	// example.com/demo/podinfo 1.0.0
	// ConfigMap demo-podinfo
	// Service demo-podinfo
	// Deployment demo-podinfo
	// Pod demo-podinfo-test
}

// A renderer of one generation: Engine.Renderer gives a registry client
// configured by the generation's sidecar rule, and applies the rule (its
// signatures, local archives, image guard, platform allowances) to every
// request it renders.
// Renderer.Resolve is the first stage alone: the component version found,
// as the parameters announcement reads it.
func ExampleEngine_Renderer() {
	engine := argocdocm.NewEngine(argocdocm.WithBlobCacheDir(""))
	rule, err := engine.Rule(func(string) string { return "" }) // no sidecar policy
	if err != nil {
		log.Fatal(err)
	}
	r, err := engine.Renderer(argocdocm.Generation{Rule: rule})
	if err != nil {
		log.Fatal(err)
	}
	found, err := r.Resolve(context.Background(), argocdocm.Request{
		Repository: "testdata/demo/ctf",
		Component:  "example.com/demo/podinfo",
		Version:    "^1.0",
	})
	if err != nil {
		log.Fatal(err)
	}
	defer found.Close()
	fmt.Printf("%s resolves to %s\n", found.Requested, found.Version)
	for _, res := range found.Component.Descriptor().Resources {
		fmt.Println(res.Name, res.Type)
	}
	// Output:
	// ^1.0 resolves to 1.1.0+build.7
	// chart helmChart
	// image ociImage
}
