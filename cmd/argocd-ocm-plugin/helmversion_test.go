package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/manifests"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/manifests/manifeststest"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/ocmbuild"
)

// goRelease is a Go release as Capabilities.HelmVersion.GoVersion names it.
var goRelease = regexp.MustCompile(`go1\.[0-9]+(\.[0-9]+)?[^"\\]*`)

// The binary as built (not this test binary, whose build info lists no
// modules) reports .Capabilities.HelmVersion as the reference helm CLI does
// (testdata/helmversion/golden.yaml; internal/render/helm tests it in-process
// and makes the golden): the version comes from the binary's build info.
func TestBinaryReportsTheHelmCLIsVersion(t *testing.T) {
	if testing.Short() {
		t.Skip("links the plugin: -short")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "argocd-ocm-plugin")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	files, err := ocmbuild.ReadDir("../../testdata/helmversion/chart")
	if err != nil {
		t.Fatal(err)
	}
	chart, err := ocmbuild.PackageChart(files)
	if err != nil {
		t.Fatal(err)
	}
	c := &ocmbuild.Component{Name: "example.com/helmversion", Version: "1.0.0", Resources: []ocmbuild.Resource{
		{Name: "chart", Type: "helmChart", MediaType: ocmbuild.MediaTypeHelmChart, Data: chart}}}
	if err := ocmbuild.WriteCTF(filepath.Join(dir, "ctf"), c); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "render", "--repository", filepath.Join(dir, "ctf"), "--component", "example.com/helmversion",
		"--version", "1.0.0", "--release-name", "caps")
	cmd.Env = []string{"HOME=" + dir, "ARGOCD_OCM_CACHE_DIR=" + filepath.Join(dir, "cache")}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("render: %v: %s", err, stderr.String())
	}
	golden, err := os.ReadFile("../../testdata/helmversion/golden.yaml")
	if err != nil {
		t.Fatal(err)
	}
	data := func(objs []manifests.Object) map[string]any {
		m := map[string]any{}
		for _, o := range objs {
			meta, _ := o["metadata"].(map[string]any)
			m[fmt.Sprint(meta["name"])] = o["data"]
		}
		return m
	}
	// The Go release in the golden is the reference CLI's; the binary was
	// built by this Go.
	want := manifeststest.Parse(t, goRelease.ReplaceAllString(string(golden), runtime.Version()))
	if got, want := data(manifeststest.Parse(t, string(out))), data(want); !reflect.DeepEqual(got, want) {
		t.Errorf("the binary's .Capabilities.HelmVersion:\n%v\nthe helm CLI's:\n%v", got, want)
	}
}
