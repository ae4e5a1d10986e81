package argocdocm_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
)

// A Go program renders a component version of a CTF (here the repository's
// demo archive) with the zero Renderer: offline, no signature required.
// Version accepts a semver constraint; the result names the version it chose.
func ExampleRenderer_Render() {
	var r argocdocm.Renderer
	res, err := r.Render(context.Background(), argocdocm.Request{
		Application: "demo",
		Repository:  "testdata/demo/ctf",
		Component:   "example.com/demo/podinfo",
		Version:     "~1.0",
		ReleaseName: "podinfo",
		Namespace:   "demo",
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Component, res.Version)
	for _, obj := range res.Objects {
		meta, _ := obj["metadata"].(map[string]any)
		fmt.Println(obj["kind"], meta["name"])
	}
	// Output:
	// example.com/demo/podinfo 1.0.0
	// ConfigMap podinfo
	// Service podinfo
	// Deployment podinfo
	// Pod podinfo-test
}

// Every error a render returns is one line naming the Application,
// component and version, and wraps a sentinel of package errdef that a
// program matches with errors.Is.
func ExampleRenderer_Render_errors() {
	var r argocdocm.Renderer
	_, err := r.Render(context.Background(), argocdocm.Request{
		Application: "demo",
		Repository:  "testdata/demo/ctf",
		Component:   "example.com/demo/podinfo",
		Version:     "9.9.9",
	})
	fmt.Println(errors.Is(err, errdef.ErrNotFound))
	fmt.Println(err)
	// Output:
	// true
	// application demo: component example.com/demo/podinfo:9.9.9: version 9.9.9 of component example.com/demo/podinfo not found in testdata/demo/ctf (available: 1.0.0, 1.1.0+build.7)
}
