// Command registry is the CNCF distribution registry's own command
// (github.com/distribution/distribution/v3/cmd/registry: `registry serve
// config.yml`) with the local storage drivers only, built from this module's
// pinned distribution so that the live suite (test/e2e) runs a real registry,
// notifications included, without the cloud drivers' modules.
package main

import (
	"os"

	"github.com/distribution/distribution/v3/registry"
	_ "github.com/distribution/distribution/v3/registry/auth/htpasswd"
	_ "github.com/distribution/distribution/v3/registry/storage/driver/filesystem"
	_ "github.com/distribution/distribution/v3/registry/storage/driver/inmemory"
)

func main() {
	if err := registry.RootCmd.Execute(); err != nil {
		os.Exit(1)
	}
}
