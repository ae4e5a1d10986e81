package main

import (
	"os/exec"
	"strings"
	"testing"
)

// The plugin renders with Helm's engine and chart packages, not its install
// action: pkg/action links kubectl, client-go's typed clients and more, about
// 6 ms of start-up and 6 MiB of every generate process (internal/render/helm
// install.go runs Install's client-only steps itself).
func TestBinaryDoesNotLinkHelmActionOrKubectl(t *testing.T) {
	if testing.Short() {
		t.Skip("go list: -short")
	}
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, pkg := range strings.Fields(string(out)) {
		if pkg == "helm.sh/helm/v3/pkg/action" || strings.HasPrefix(pkg, "k8s.io/kubectl/") {
			t.Errorf("the binary links %s", pkg)
		}
	}
}
