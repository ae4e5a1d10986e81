package argocdocm_test

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/manifests"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/examples"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/ocmbuild"
)

// Through a sharing engine (a render-server worker), the CRDs a chart keeps
// (crds/ files and a template rendering CRDs only) are written from their
// kept JSON text from the second generation on, and the stream is byte for
// byte the one encoding gives; when the render changes them (sync waves
// placed on the CRDs because the chart uses waves) nothing is taken from
// the kept text. A plain engine (a process) keeps nothing.
func TestKnownJSONGivesTheEncodedText(t *testing.T) {
	files := examples.CRDChartFiles(2, 4<<10)
	files["templates/crd.yaml"] = bytes.Replace(files["crds/kind00.yaml"], []byte("kind00"), []byte("templated00"), -1)
	waves := map[string][]byte{}
	for k, v := range files {
		waves[k] = v
	}
	waves["templates/configmap.yaml"] = []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-crds\n  annotations: {argocd.argoproj.io/sync-wave: \"2\"}\n")
	ctf := filepath.Join(t.TempDir(), "ctf")
	var comps []*ocmbuild.Component
	for name, f := range map[string]map[string][]byte{"example.com/crds/plain": files, "example.com/crds/waves": waves} {
		tgz, err := ocmbuild.PackageChart(f)
		if err != nil {
			t.Fatal(err)
		}
		comps = append(comps, &ocmbuild.Component{Name: name, Version: "1.0.0", Provider: "example.com", Resources: []ocmbuild.Resource{
			{Name: "chart", Type: "helmChart", MediaType: ocmbuild.MediaTypeHelmChart, Data: tgz}}})
	}
	if err := ocmbuild.WriteCTF(ctf, comps...); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		component string
		sharing   bool
		hits      int // objects written from the kept text, from the second generation on
	}{
		{"server", "example.com/crds/plain", true, 3},
		{"server, CRDs changed by the render", "example.com/crds/waves", true, 0},
		{"process", "example.com/crds/plain", false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := []argocdocm.EngineOption{argocdocm.WithBlobCacheDir(t.TempDir())}
			if tc.sharing {
				opts = append(opts, argocdocm.WithSharing(0))
			}
			e := argocdocm.NewEngine(opts...)
			for gen := 0; gen < 3; gen++ {
				r, err := e.Renderer(argocdocm.Generation{})
				if err != nil {
					t.Fatal(err)
				}
				res, err := r.Render(context.Background(), argocdocm.Request{Repository: ctf, Component: tc.component, Version: "1.0.0", ReleaseName: "crds", Namespace: "ns"})
				if err != nil {
					t.Fatal(err)
				}
				hits := 0
				known, err := manifests.EncodeStreamKnown(res.Objects, true, func(o manifests.Object) ([]byte, bool) {
					text, ok := r.KnownJSON(o)
					if ok {
						hits++
					}
					return text, ok
				})
				if err != nil {
					t.Fatal(err)
				}
				plain, err := manifests.EncodeStream(res.Objects, true)
				if err != nil {
					t.Fatal(err)
				}
				var a, b bytes.Buffer
				known.WriteTo(&a)
				plain.WriteTo(&b)
				if !bytes.Equal(a.Bytes(), b.Bytes()) {
					t.Fatalf("generation %d: the stream with kept texts differs from the encoded one", gen)
				}
				if want := tc.hits; gen == 0 && hits != 0 || gen > 0 && hits != want {
					t.Errorf("generation %d: %d objects from kept texts, want %d", gen, hits, map[bool]int{true: 0, false: want}[gen == 0])
				}
				if tc.component == "example.com/crds/waves" && !strings.Contains(b.String(), `"CustomResourceDefinition","metadata":{"annotations":{"argocd.argoproj.io/sync-wave"`) {
					t.Fatalf("generation %d: no sync wave placed on the CRDs: the case tests nothing", gen)
				}
			}
		})
	}
}
