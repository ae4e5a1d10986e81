// Command gen-testdata rebuilds the committed example CTF (testdata/demo/ctf)
// and the offline distro bundle (testdata/distro/idp-bundle.tgz) from the
// sources under testdata/src. Run it from the repository root
// (`make testdata`).
package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/examples"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/ocmbuild"
)

func main() {
	if err := run("testdata/src", "testdata/demo/ctf", "testdata/distro/idp-bundle.tgz"); err != nil {
		fmt.Fprintln(os.Stderr, "gen-testdata:", err)
		os.Exit(1)
	}
}

func run(src, out, distroBundle string) error {
	comps, err := examples.Demo(src)
	if err != nil {
		return err
	}
	if err := os.RemoveAll(out); err != nil {
		return err
	}
	if err := ocmbuild.WriteCTF(out, comps...); err != nil {
		return err
	}
	distro, err := examples.DistroComponents(src)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(distroBundle), 0o755); err != nil {
		return err
	}
	return ocmbuild.WriteCTFArchive(distroBundle, true, distro...)
}
