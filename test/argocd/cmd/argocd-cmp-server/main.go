// Command argocd-cmp-server is Argo CD's argocd-cmp-server as Argo CD's
// multi-call binary runs it (its cmd/main.go, case "argocd-cmp-server"),
// built from the pinned Argo CD module for the sidecar tests
// (sidecar_test.go): signal handling, log settings and all.
package main

import (
	"os"

	cmpserver "github.com/argoproj/argo-cd/v3/cmd/argocd-cmp-server/commands"
)

func main() {
	if err := cmpserver.NewCommand().Execute(); err != nil {
		os.Exit(1)
	}
}
