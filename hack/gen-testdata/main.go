// Command gen-testdata rebuilds the committed example CTF (testdata/demo/ctf)
// from the sources under testdata/src. Run it from the repository root
// (`make testdata`).
package main

import (
	"fmt"
	"os"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/examples"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/ocmbuild"
)

func main() {
	if err := run("testdata/src", "testdata/demo/ctf"); err != nil {
		fmt.Fprintln(os.Stderr, "gen-testdata:", err)
		os.Exit(1)
	}
}

func run(src, out string) error {
	comps, err := examples.Demo(src)
	if err != nil {
		return err
	}
	if err := os.RemoveAll(out); err != nil {
		return err
	}
	return ocmbuild.WriteCTF(out, comps...)
}
