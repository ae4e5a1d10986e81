package registry_test

import (
	"fmt"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/registry"
)

func ExampleEnvName() {
	for _, host := range []string{"ghcr.io", "127.0.0.1:5000"} {
		fmt.Println(registry.EnvPrefix + registry.EnvName(host) + "_USERNAME")
	}
	// Output:
	// ARGOCD_OCM_REGISTRY_GHCR_IO_USERNAME
	// ARGOCD_OCM_REGISTRY_127_0_0_1_5000_USERNAME
}
