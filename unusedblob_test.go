package argocdocm_test

import (
	"context"
	"crypto/rand"
	"strings"
	"testing"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/ocmbuild"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/registrytest"
)

// A component with a chart and a large blob the render does not use (an
// octet-stream blob is a candidate RGD, so the planner looks at blobs): the
// blob is never requested, since its manifest size is over what an RGD may
// be. Before, every cold render downloaded it whole into the cache.
func TestUnusedLargeBlobIsNeverFetched(t *testing.T) {
	chart, err := ocmbuild.PackageChart(map[string][]byte{
		"Chart.yaml":        []byte("apiVersion: v2\nname: probe\nversion: 0.1.0\n"),
		"templates/cm.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: probe}\n"),
	})
	if err != nil {
		t.Fatal(err)
	}
	set, err := ocmbuild.ChartArtifactSet(chart, "0.1.0", false)
	if err != nil {
		t.Fatal(err)
	}
	big := make([]byte, 4<<20) // over the 1 MiB an RGD document may have
	rand.Read(big)
	comp := &ocmbuild.Component{Name: "example.com/unused", Version: "1.0.0", Provider: "example.com", Resources: []ocmbuild.Resource{
		{Name: "chart", Type: "helmChart", Data: set, MediaType: ocmbuild.MediaTypeArtifactSet},
		{Name: "dataset", Type: "blob", Data: big, MediaType: "application/octet-stream"},
	}}
	art, err := comp.Artifact()
	if err != nil {
		t.Fatal(err)
	}
	var bigDigest string
	for d, b := range art.Blobs {
		if len(b) == len(big) {
			bigDigest = d
		}
	}
	if bigDigest == "" {
		t.Fatal("the blob is no layer of the component's manifest")
	}
	reg := registrytest.Start(t)
	reg.Push(t, "ocm", comp)
	reg.Reset()
	res, err := registryRenderer(t, t.TempDir()).Render(context.Background(), argocdocm.Request{
		Repository: "http://" + reg.Host + "/ocm", Component: comp.Name, Version: comp.Version,
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Objects) != 1 {
		t.Fatalf("%d objects", len(res.Objects))
	}
	// The render read its blobs from this registry (its cache was empty), so
	// that none of the requests was for the large one means something.
	if reg.Count(registrytest.Request.IsBlob) == 0 {
		t.Fatalf("the render requested no blob at all: %v", reg.Requests())
	}
	n := reg.Count(func(r registrytest.Request) bool { return r.IsBlob() && strings.HasSuffix(r.Path, bigDigest) })
	if n != 0 {
		t.Fatalf("the unused blob was requested %d times: %v", n, reg.Requests())
	}
}
