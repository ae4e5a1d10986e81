// Command attackfixtures writes the Application directory hack/attack-figures.py
// measures: the demo CTF (ctf/), a CTF of hostile charts (hostile/: tpl
// recursion, printf doubling, a CPU loop) and a deployment definition that
// is a YAML alias bomb (bomb.yaml). The charts are
// examples.HostileComponents, as in cmd/argocd-ocm-plugin/attack_test.go.
// The live suite (test/e2e) also reads fleet/: a CTF of the real podinfo
// chart (testdata/fleet) as component example.com/fleet/podinfo, versions
// 6.14.1 and 6.14.2 (the same chart), for its fleet and webhook scenarios.
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
	chart, err := os.ReadFile(filepath.Join("testdata", "fleet", "podinfo-6.14.1.tgz"))
	if err != nil {
		return fmt.Errorf("the fleet's chart (run from the repository's root): %w", err)
	}
	var fleet []*ocmbuild.Component
	for _, v := range []string{"6.14.1", "6.14.2"} {
		set, err := ocmbuild.ChartArtifactSet(chart, "6.14.1", false)
		if err != nil {
			return err
		}
		fleet = append(fleet, &ocmbuild.Component{Name: "example.com/fleet/podinfo", Version: v, Provider: "example.com",
			Resources: []ocmbuild.Resource{{Name: "chart", Type: "helmChart", Data: set, MediaType: ocmbuild.MediaTypeArtifactSet}}})
	}
	if err := ocmbuild.WriteCTF(filepath.Join(dir, "fleet", "ctf"), fleet...); err != nil {
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
