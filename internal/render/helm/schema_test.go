package helm_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/helm"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/ocmbuild"
)

// schemaChart packages a one-template chart with the given values.schema.json
// (and, when sub is set, a subchart "sub" with that schema instead).
func schemaChart(t *testing.T, schema string, sub bool) []byte {
	t.Helper()
	files := map[string][]byte{
		"Chart.yaml":        []byte("apiVersion: v2\nname: schemachart\nversion: 0.1.0\n"),
		"values.yaml":       []byte("replicas: 1\nsub: {}\n"),
		"templates/cm.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\ndata: {replicas: \"{{ .Values.replicas }}\"}\n"),
	}
	name := "values.schema.json"
	if sub {
		name = "charts/sub/values.schema.json"
		files["charts/sub/Chart.yaml"] = []byte("apiVersion: v2\nname: sub\nversion: 0.1.0\n")
		files["charts/sub/values.yaml"] = []byte("x: 1\n")
	}
	files[name] = []byte(schema)
	c, err := ocmbuild.PackageChart(files)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Helm v4.3.2 compiles values.schema.json with loaders for file://, http://
// and https:// (chartutil.ValidateAgainstSingleSchema): a chart could make the
// repo-server fetch any URL (cloud metadata, internal services) or read any
// local file, and leak parts of it through validation messages. The renderer
// refuses every $ref and $schema that would be loaded from outside the
// schema document, before Helm sees the chart: no request, no file read.
func TestSchemaRefsStayInsideTheChart(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"type": "object", "required": ["leaked-from-the-network"]}`)
	}))
	defer srv.Close()

	dir := t.TempDir()
	// A file that, were it read, would make validation fail with its content.
	secret := filepath.Join(dir, "secret.json")
	os.WriteFile(secret, []byte(`{"type": "object", "required": ["leaked-from-the-disk"]}`), 0o600)
	// A FIFO: a loader that opens it for reading blocks until a writer comes,
	// which the probe below detects (and then unblocks).
	fifo := filepath.Join(dir, "fifo.json")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	var fifoOpened atomic.Bool
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
			// Opening a FIFO write-only and non-blocking fails with ENXIO
			// unless a reader has it open.
			f, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0)
			if err == nil {
				fifoOpened.Store(true)
				f.Write([]byte(`true`))
				f.Close()
			}
		}
	}()

	for _, tc := range []struct {
		name, schema string
		sub          bool
		mention      string
	}{
		{"http $ref", `{"$ref": "` + srv.URL + `/schema.json"}`, false, srv.URL + "/schema.json"},
		{"https $ref", `{"properties": {"a": {"$ref": "https://127.0.0.1:1/x.json"}}}`, false, "https://127.0.0.1:1/x.json"},
		{"file $ref", `{"$ref": "file://` + secret + `"}`, false, "file://" + secret},
		{"file $ref to a FIFO", `{"$ref": "file://` + fifo + `"}`, false, "file://" + fifo},
		{"relative $ref resolves to file:///", `{"$ref": "../../../../` + strings.TrimPrefix(secret, "/") + `"}`, false, secret},
		{"$id rebases a relative $ref onto http", `{"$id": "` + srv.URL + `/base/", "properties": {"a": {"$ref": "x.json"}}}`, false, srv.URL + "/base/x.json"},
		{"remote $schema", `{"$schema": "` + srv.URL + `/meta.json", "type": "object"}`, false, srv.URL + "/meta.json"},
		{"$dynamicRef", `{"$dynamicRef": "` + srv.URL + `/d.json"}`, false, srv.URL + "/d.json"},
		{"subchart schema", `{"$ref": "` + srv.URL + `/sub.json"}`, true, "sub"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			done := make(chan error, 1)
			go func() {
				_, err := helm.Render(context.Background(), schemaChart(t, tc.schema, tc.sub), helm.Options{})
				done <- err
			}()
			var err error
			select {
			case err = <-done:
			case <-time.After(20 * time.Second):
				t.Fatal("render hangs (a loader opened the FIFO?)")
			}
			if !errors.Is(err, errdef.ErrRender) || !errors.Is(err, errdef.ErrUnsafeArchive) {
				t.Fatalf("got %v, want ErrRender and ErrUnsafeArchive", err)
			}
			if !strings.Contains(err.Error(), tc.mention) || !strings.Contains(err.Error(), "values.schema.json") {
				t.Errorf("message %q does not name %q and values.schema.json", err, tc.mention)
			}
			if testing.Verbose() {
				t.Log(err)
			}
			if strings.Contains(err.Error(), "leaked-from") {
				t.Errorf("message carries fetched content: %v", err)
			}
		})
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the schema server got %d requests, want none", n)
	}
	if fifoOpened.Load() {
		t.Error("a schema loader opened the FIFO")
	}
}

// Schemas that stay inside themselves keep working exactly as in Helm:
// local $ref and $defs, known draft $schema URLs, urn: references (Helm
// treats an unresolved URN as a permissive schema).
func TestLocalSchemaRefsStillValidate(t *testing.T) {
	schema := `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "$defs": {"count": {"type": "integer", "minimum": 1}},
  "type": "object",
  "properties": {
    "replicas": {"$ref": "#/$defs/count"},
    "sub": {"$ref": "urn:example:anything"}
  }
}`
	ctx := context.Background()
	if _, err := helm.Render(ctx, schemaChart(t, schema, false), helm.Options{}); err != nil {
		t.Fatalf("valid values refused: %v", err)
	}
	_, err := helm.Render(ctx, schemaChart(t, schema, false), helm.Options{Values: map[string]any{"replicas": 0}})
	if !errors.Is(err, errdef.ErrRender) || !strings.Contains(err.Error(), "values don't meet the specifications of the schema") ||
		!strings.Contains(err.Error(), "/replicas") {
		t.Fatalf("schema violation: %v", err)
	}
	for _, draft := range []string{"http://json-schema.org/draft-07/schema#", "https://json-schema.org/draft-07/schema#", "http://json-schema.org/draft-04/schema#"} {
		s := `{"$schema": "` + draft + `", "type": "object", "properties": {"replicas": {"type": "integer"}}}`
		if _, err := helm.Render(ctx, schemaChart(t, s, false), helm.Options{}); err != nil {
			t.Fatalf("$schema %s: %v", draft, err)
		}
	}
}

// The render server remembers values that passed a kept chart's schemas
// (by their JSON): the same values again pass without validation, and any
// other values are validated, every time they fail; a subchart's schema is
// covered by the same values. Interleaved, as tenants' generations are.
func TestKeptChartValidatesEveryNewValues(t *testing.T) {
	schema := `{"type": "object", "properties": {"replicas": {"type": "integer", "minimum": 1}, "x": {"type": "integer"}}}`
	ctx := context.Background()
	for _, sub := range []bool{false, true} {
		archive := schemaChart(t, schema, sub)
		opts := helm.Options{Charts: helm.NewChartCache(0)}
		bad := map[string]any{"replicas": 0}
		if sub {
			bad = map[string]any{"sub": map[string]any{"x": "one"}}
		}
		for i, vals := range []map[string]any{nil, {"replicas": 2}, bad, {"replicas": 2}, bad, nil, {"replicas": int64(3)}, bad} {
			opts.Values = vals
			_, err := helm.Render(ctx, archive, opts)
			wantErr := fmt.Sprint(vals) == fmt.Sprint(bad)
			if (err != nil) != wantErr || (wantErr && !strings.Contains(err.Error(), "values don't meet the specifications of the schema")) {
				t.Fatalf("sub %v, render %d with %v: %v", sub, i, vals, err)
			}
		}
	}
}
