package argocdocm_test

import (
	"strings"
	"testing"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/ocm"
)

// A selector repeated (by a hostile Application: 10 000 times) or two
// spellings of one identity select the resource once.
func TestSelectResourcesDeduplicates(t *testing.T) {
	d := &ocm.Descriptor{Name: "example.com/x", Version: "1.0.0", Resources: []ocm.Resource{
		{ElementMeta: ocm.ElementMeta{Name: "chart"}, Type: "helmChart"},
		{ElementMeta: ocm.ElementMeta{Name: "tree"}, Type: "directoryTree"},
	}}
	sel := append(strings.Split(strings.Repeat("chart ", 10000), " ")[:10000], "tree", "chart")
	got, err := argocdocm.SelectResources(d, sel)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Name != "chart" || got[1].Name != "tree" {
		t.Fatalf("selected %d resources: %v", len(got), got)
	}
}
