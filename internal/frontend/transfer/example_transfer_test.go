package transfer_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/frontend/transfer"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/fixtures"
)

// A platform and the versions it references, from the OCM CLI's CTF into a
// tgz bundle; the second run finds everything there.
func ExampleTransfer() {
	dir, _ := os.MkdirTemp("", "example-transfer")
	defer os.RemoveAll(dir)
	t := &transfer.Transfer{
		From:      filepath.Join(fixtures.Root(), "ctf"),
		To:        filepath.Join(dir, "bundle.tgz"),
		Component: "example.com/fixtures/platform-bundle", Version: "1.0.0",
		Recursive: true,
	}
	for range 2 {
		s, err := t.Run(context.Background())
		if err != nil {
			fmt.Println(err)
			return
		}
		for _, v := range s.Versions {
			fmt.Println(v.Component, v.Version, v.Status)
		}
		fmt.Println(s.Copied())
	}
	// Output:
	// example.com/fixtures/podinfo-app 1.0.0 copied
	// example.com/fixtures/kustomize-app 1.0.0 copied
	// example.com/fixtures/platform-bundle 1.0.0 copied
	// true
	// example.com/fixtures/podinfo-app 1.0.0 present
	// example.com/fixtures/kustomize-app 1.0.0 present
	// example.com/fixtures/platform-bundle 1.0.0 present
	// false
}
