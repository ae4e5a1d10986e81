package helm_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"log"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/helm"
)

// Render renders a chart archive as helm template does, with values that
// win over the chart's.
func ExampleRender() {
	// A chart archive, as a helmChart resource holds it.
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, f := range []struct{ name, body string }{
		{"hello/Chart.yaml", "apiVersion: v2\nname: hello\nversion: 1.0.0\n"},
		{"hello/values.yaml", "greeting: hello\n"},
		{"hello/templates/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-hello\n  namespace: {{ .Release.Namespace }}\ndata:\n  greeting: {{ .Values.greeting | quote }}\n"},
	} {
		tw.WriteHeader(&tar.Header{Name: f.name, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(f.body))})
		tw.Write([]byte(f.body))
	}
	tw.Close()
	zw.Close()

	objs, err := helm.Render(context.Background(), buf.Bytes(), helm.Options{
		ReleaseName: "demo",
		Namespace:   "demo",
		Values:      map[string]any{"greeting": "hi"},
	})
	if err != nil {
		log.Fatal(err)
	}
	for _, o := range objs {
		meta := o["metadata"].(map[string]any)
		fmt.Println(o["kind"], meta["namespace"], meta["name"], o["data"])
	}
	// Output:
	// ConfigMap demo demo-hello map[greeting:hi]
}
