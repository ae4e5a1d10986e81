// Command attackfixtures writes the Application directory hack/attack-figures.py
// measures: the demo CTF (ctf/), a CTF of hostile charts (hostile/: tpl
// recursion, printf doubling, a CPU loop) and a deployment definition that
// is a YAML alias bomb (bomb.yaml). The charts are
// examples.HostileComponents, as in cmd/argocd-ocm-plugin/attack_test.go.
package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/examples"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/ocmbuild"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: attackfixtures DIR")
		os.Exit(2)
	}
	dir := os.Args[1]
	if err := write(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func write(dir string) error {
	comps, err := examples.HostileComponents()
	if err != nil {
		return err
	}
	if err := ocmbuild.WriteCTF(filepath.Join(dir, "hostile"), comps...); err != nil {
		return err
	}
	if out, err := exec.Command("cp", "-r", "testdata/demo/ctf", filepath.Join(dir, "ctf")).CombinedOutput(); err != nil {
		return fmt.Errorf("copying the demo CTF (run from the repository's root): %v: %s", err, out)
	}
	var b strings.Builder
	b.WriteString("apiVersion: deploy.ocm.software/v1alpha1\nkind: DeploymentDefinition\nx0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n")
	for i := 1; i < 9; i++ {
		p := fmt.Sprintf("*a%d", i-1)
		fmt.Fprintf(&b, "x%d: &a%d [%s]\n", i, i, strings.TrimSuffix(strings.Repeat(p+", ", 10), ", "))
	}
	return os.WriteFile(filepath.Join(dir, "bomb.yaml"), []byte(b.String()), 0o644)
}
