package deployment_test

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/planning/explain"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/ocmbuild"
)

// tarFiles packs files as a directoryTree blob.
func tarFiles(t *testing.T, files map[string]string) []byte {
	t.Helper()
	bs := make(map[string][]byte, len(files))
	for n, f := range files {
		bs[n] = []byte(f)
	}
	b, err := ocmbuild.TarFiles(bs, false)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The destination namespace is not written into kustomize or plain
// directory output, as Argo CD does for kustomize and directory sources
// (Argo CD sets it on objects without one at sync); --explain says so.
func TestDirectoryDestinationNamespace(t *testing.T) {
	const comp = "example.com/test/ns"
	cmA := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n"
	cmB := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\n  namespace: own\n"
	kust := tarFiles(t, map[string]string{"kustomization.yaml": "resources: [a.yaml, b.yaml]\n", "a.yaml": cmA, "b.yaml": cmB})
	kustNS := tarFiles(t, map[string]string{"kustomization.yaml": "namespace: bound\nresources: [a.yaml, b.yaml]\n", "a.yaml": cmA, "b.yaml": cmB})
	plain := tarFiles(t, map[string]string{"a.yaml": cmA, "b.yaml": cmB})
	dir := filepath.Join(t.TempDir(), "ctf")
	res := func(name string, data []byte) ocmbuild.Resource {
		return ocmbuild.Resource{Name: name, Type: "directoryTree", MediaType: ocmbuild.MediaTypeTar, Data: data}
	}
	if err := ocmbuild.WriteCTF(dir, &ocmbuild.Component{Name: comp, Version: "1.0.0", Resources: []ocmbuild.Resource{
		res("kustomize", kust), res("kustomize-ns", kustNS), res("plain", plain)}}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		resource string
		want     map[string]string // ConfigMap name → namespace in the output
	}{
		{"kustomize", map[string]string{"a": "", "b": "own"}},
		{"kustomize-ns", map[string]string{"a": "bound", "b": "bound"}},
		{"plain", map[string]string{"a": "", "b": "own"}},
	} {
		t.Run(tc.resource, func(t *testing.T) {
			var report *explain.Report
			out, err := renderer(func(r *explain.Report) { report = r }).Render(context.Background(), argocdocm.Request{
				Repository: dir, Component: comp, Version: "1.0.0", Resources: []string{tc.resource}, Namespace: "dest"})
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			for _, o := range out.Objects {
				md := o["metadata"].(map[string]any)
				ns, _ := md["namespace"].(string)
				got[md["name"].(string)] = ns
			}
			if len(got) != len(tc.want) {
				t.Fatalf("objects %v, want %v", got, tc.want)
			}
			for n, ns := range tc.want {
				if got[n] != ns {
					t.Errorf("ConfigMap %s in namespace %q, want %q", n, got[n], ns)
				}
			}
			var buf bytes.Buffer
			if err := report.WriteText(&buf); err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{
				"render " + tc.resource + ": resource " + tc.resource + " (directoryTree)",
				"path: (not set) the resource label " + argocdocm.EntryPathLabel,
				`namespace: not written into the output, as Argo CD does for kustomize and directory sources: objects without a namespace are put into the destination namespace "dest" by Argo CD at sync`,
			} {
				if !strings.Contains(buf.String(), want) {
					t.Errorf("explain lacks %q:\n%s", want, buf.String())
				}
			}
		})
	}
}
