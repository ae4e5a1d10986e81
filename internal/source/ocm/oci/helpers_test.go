package oci_test

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/cache"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/ocm/oci"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/registry"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/ocmbuild"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/registrytest"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/ocm"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/policy"
)

const (
	compName = "example.com/test/app"
	secret   = "s3cr3t-P4ssw0rd-never-printed"
)

type testData struct {
	chartTgz []byte // plain chart archive
	set      []byte // OCM artifact set holding the chart
	tree     []byte // directoryTree tar
}

func makeData(t testing.TB) testData {
	t.Helper()
	tgz, err := ocmbuild.PackageChart(map[string][]byte{
		"Chart.yaml":        []byte("apiVersion: v2\nname: mychart\nversion: 0.2.0\n"),
		"values.yaml":       []byte("replicas: 1\n"),
		"templates/cm.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n"),
	})
	if err != nil {
		t.Fatal(err)
	}
	set, err := ocmbuild.ChartArtifactSet(tgz, "0.2.0", false)
	if err != nil {
		t.Fatal(err)
	}
	tree, err := ocmbuild.TarFiles(map[string][]byte{"deploy.yaml": []byte("kind: Deployment\n")}, false)
	if err != nil {
		t.Fatal(err)
	}
	return testData{chartTgz: tgz, set: set, tree: tree}
}

func component(d testData, version string) *ocmbuild.Component {
	return &ocmbuild.Component{
		Name: compName, Version: version,
		Resources: []ocmbuild.Resource{
			{Name: "chart", Type: "helmChart", Data: d.set, MediaType: ocmbuild.MediaTypeArtifactSet},
			{Name: "plainchart", Type: "helmChart", Data: d.chartTgz, MediaType: ocmbuild.MediaTypeHelmChart},
			{Name: "manifests", Type: "directoryTree", Data: d.tree, MediaType: ocmbuild.MediaTypeTar},
			{Name: "image", Type: "ociImage", Version: "6.7.0", Access: map[string]any{"type": "ociArtifact", "imageReference": "ghcr.io/stefanprodan/podinfo:6.7.0"}},
		},
	}
}

func noEnv(string) (string, bool) { return "", false }

// logSink collects what the packages log, to check that no secret appears.
type logSink struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logSink) Write(p []byte) (int, error) { l.mu.Lock(); defer l.mu.Unlock(); return l.b.Write(p) }
func (l *logSink) String() string              { l.mu.Lock(); defer l.mu.Unlock(); return l.b.String() }

func (l *logSink) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(l, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// baseOpts isolates a client from the machine: no docker config, no
// environment, a private cache, quick retries.
func baseOpts(cacheDir string, extra ...registry.Option) []oci.Option {
	c := cache.Disabled()
	if cacheDir != "" {
		c = cache.Open(cacheDir)
	}
	ro := append([]registry.Option{registry.WithoutDockerConfig(), registry.WithEnv(noEnv), registry.WithBackoff(5*time.Millisecond, 20*time.Millisecond)}, extra...)
	return []oci.Option{oci.WithCache(c), oci.WithRegistryOptions(ro...)}
}

func open(t testing.TB, reg *registrytest.Registry, cacheDir string, extra ...oci.Option) *oci.Repository {
	t.Helper()
	r, err := oci.New("http://"+reg.Host+"/ocm", append(baseOpts(cacheDir), extra...)...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func readBlob(t testing.TB, b ocm.Blob, err error) []byte {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	data, err := io.ReadAll(b)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// envCreds serves ARGOCD_OCM_REGISTRY_<NAME>_USERNAME/PASSWORD.
func envCreds(creds map[string][2]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		for name, up := range creds {
			switch k {
			case "ARGOCD_OCM_REGISTRY_" + name + "_USERNAME":
				return up[0], true
			case "ARGOCD_OCM_REGISTRY_" + name + "_PASSWORD":
				return up[1], true
			}
		}
		return "", false
	}
}

// twoTenantPolicy is a sidecar policy of two projects: a reads aHost/ocm
// with credential A (envCreds), b reads bHost/bPrefix without one; both
// over plain HTTP.
func twoTenantPolicy(t testing.TB, aHost, bHost, bPrefix string) *policy.Policy {
	t.Helper()
	p, err := policy.Parse([]byte(fmt.Sprintf(`apiVersion: argocd-ocm-plugin.io/v1alpha1
kind: SidecarPolicy
credentials:
- {name: a, host: %q, pathPrefix: ocm, env: A}
rules:
- {name: a, projects: [a], repositories: [{host: %q, pathPrefix: ocm}], credentials: [a], plainHTTP: [%q]}
- {name: b, projects: [b], repositories: [{host: %q, pathPrefix: %s}], plainHTTP: [%q]}
`, aHost, aHost, aHost, bHost, bPrefix, bHost)), "test")
	if err != nil {
		t.Fatal(err)
	}
	return p
}
