package generator_test

import (
	"bufio"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/ocmbuild"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/registrytest"
)

// TestHelperRegistry is not a test of its own: with
// ARGOCD_OCM_TEST_REGISTRY_PASSWORD set it serves an in-process CNCF
// distribution registry with basic auth (user "robot") for the Argo CD
// contract tests (test/argocd is a module of its own, which cannot import
// the registry), until its stdin closes. It prints
//
//	registry <repository URL>
//
// then, per line "push <component> <version>" on stdin, pushes that
// version and prints "pushed <descriptor digest>".
func TestHelperRegistry(t *testing.T) {
	pass := os.Getenv("ARGOCD_OCM_TEST_REGISTRY_PASSWORD")
	if pass == "" {
		t.Skip("helper process of test/argocd")
	}
	reg := registrytest.Start(t, registrytest.WithBasicAuth("robot", pass))
	reg.Push(t, "ocm",
		app("example.com/demo/podinfo", "1.0.0"), app("example.com/demo/podinfo", "1.0.1"), app("example.com/demo/podinfo", "1.1.0-rc.1"),
		app("example.com/demo/podinfo-extras", "1.0.0"),
		platformOf("example.com/demo/platform", "1.0.0",
			ocmbuild.Reference{Name: "podinfo", ComponentName: "example.com/demo/podinfo", Version: "1.0.1"},
			ocmbuild.Reference{Name: "extras", ComponentName: "example.com/demo/podinfo-extras", Version: "1.0.0"}))
	fmt.Printf("registry %s/ocm\n", reg.URL)
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		f := strings.Fields(in.Text())
		if len(f) != 3 || f[0] != "push" {
			fmt.Printf("error: want push COMPONENT VERSION\n")
			continue
		}
		p := reg.Push(t, "ocm", app(f[1], f[2]))
		fmt.Printf("pushed %s\n", p[0].ManifestDigest)
	}
}
