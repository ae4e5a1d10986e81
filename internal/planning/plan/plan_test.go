package plan_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/application"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/planning/plan"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/plantest"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/ocm"
)

// HelmValues layers as helm does: files in order, inline values, then
// --set-json, --set, --set-string and --set-file; maps merge deeply, the
// rest is replaced; a file is read through the request.
func TestHelmValuesLayerInHelmsOrder(t *testing.T) {
	dir := t.TempDir()
	for name, text := range map[string]string{
		"a.yaml":   "image: {repository: a, tag: '1'}\nreplicas: 1\nlist: [1, 2]\n",
		"b.yaml":   "image: {tag: '2'}\nlist: [3]\n",
		"cert.pem": "-----BEGIN-----\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	req := application.Request{Dir: dir, ValueFiles: []string{"a.yaml", "b.yaml"},
		Values:  map[string]any{"replicas": 2, "inline": true},
		SetJSON: []string{`obj={"k":"json"}`}, Set: []string{"replicas=3", "obj.k=set"}, SetString: []string{"tag=5"},
		SetFile: []string{"cert=cert.pem"}}
	var read []string
	got, err := plan.HelmValues(plan.Input{Request: req}, func(name string) ([]byte, error) {
		read = append(read, name)
		return req.ReadFile("value-files", name)
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"image": map[string]any{"repository": "a", "tag": "2"}, "replicas": int64(3), "list": []any{float64(3)},
		"inline": true, "obj": map[string]any{"k": "set"}, "tag": "5", "cert": "-----BEGIN-----\n"}
	if !reflect.DeepEqual(normal(got), normal(want)) {
		t.Errorf("values\n got %#v\nwant %#v", got, want)
	}
	if !reflect.DeepEqual(read, []string{"a.yaml", "b.yaml"}) {
		t.Errorf("files read %v", read)
	}
	if _, err := plan.HelmValues(plan.Input{Request: application.Request{SetJSON: []string{"a={"}}}, nil); !errors.Is(err, errdef.ErrInvalidInput) {
		t.Errorf("bad --set-json: %v", err)
	}
}

// normal makes numbers comparable (Helm's parsers give int64 or float64).
func normal(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, e := range v {
			out[k] = normal(e)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = normal(e)
		}
		return out
	case int:
		return float64(v)
	case int64:
		return float64(v)
	}
	return v
}

// SelectResources: by name or identity, once each; without selectors the
// only renderable resource, and a clear refusal when there is none or more.
func TestSelectResources(t *testing.T) {
	d := plantest.NewComponent("example.com/c", "1.0.0",
		plantest.Resource("chart", plan.TypeHelmChart), plantest.Resource("image", "ociImage")).D
	got, err := plan.SelectResources(d, nil)
	if err != nil || len(got) != 1 || got[0].Name != "chart" {
		t.Fatalf("only renderable: %v, %v", got, err)
	}
	got, err = plan.SelectResources(d, []string{"chart", "chart"})
	if err != nil || len(got) != 1 {
		t.Fatalf("a selector repeated: %v, %v", got, err)
	}
	if _, err := plan.SelectResources(d, []string{"nope"}); !errors.Is(err, errdef.ErrNotFound) {
		t.Errorf("unknown resource: %v", err)
	}
	two := plantest.NewComponent("example.com/c", "1.0.0",
		plantest.Resource("a", plan.TypeHelmChart), plantest.Resource("b", plan.TypeDirectoryTree)).D
	if _, err := plan.SelectResources(two, nil); err == nil || !strings.Contains(err.Error(), "a") || !strings.Contains(err.Error(), "b") {
		t.Errorf("two renderable, none selected: %v", err)
	}
}

// How each type renders, and which render without being named.
func TestResourceTypes(t *testing.T) {
	for typ, want := range map[string]struct {
		renders          plan.Renders
		renderable, name bool
	}{
		plan.TypeHelmChart:     {plan.RendersChart, true, true},
		plan.TypeDirectoryTree: {plan.RendersTree, true, true},
		plan.TypeFilesystem:    {plan.RendersTree, true, true},
		plan.TypeOCIArtifact:   {plan.RendersTree, false, true},
		"ociImage":             {plan.RendersNothing, false, false},
	} {
		if got := plan.RendersOf(typ); got != want.renders {
			t.Errorf("RendersOf(%s) = %v", typ, got)
		}
		if got := plan.Renderable(typ); got != want.renderable {
			t.Errorf("Renderable(%s) = %v", typ, got)
		}
		if got := plan.RenderableNamed(typ); got != want.name {
			t.Errorf("RenderableNamed(%s) = %v", typ, got)
		}
	}
	res := plantest.Resource("image", "ociImage")
	if err := plan.NotRenderable(&res); !errors.Is(err, errdef.ErrUnsupportedMediaType) || !strings.Contains(err.Error(), "helmChart") {
		t.Errorf("NotRenderable: %v", err)
	}
}

// EntryPath: the request's or definition's path, else the resource's label,
// which must be a non-empty JSON string.
func TestEntryPath(t *testing.T) {
	res := plantest.Resource("tree", plan.TypeDirectoryTree)
	if p, err := plan.EntryPath("", res); p != "" || err != nil {
		t.Errorf("no path, no label: %q, %v", p, err)
	}
	res.Labels = []ocm.Label{{Name: plan.EntryPathLabel, Value: []byte(`"overlays/prod"`)}}
	if p, err := plan.EntryPath("", res); p != "overlays/prod" || err != nil {
		t.Errorf("label: %q, %v", p, err)
	}
	if p, err := plan.EntryPath("overlays/dev", res); p != "overlays/dev" || err != nil {
		t.Errorf("a path wins over the label: %q, %v", p, err)
	}
	res.Labels[0].Value = []byte(`42`)
	if _, err := plan.EntryPath("", res); !errors.Is(err, errdef.ErrInvalidInput) {
		t.Errorf("a label that is no string: %v", err)
	}
}

// Without a reader, a planner reads nothing, and says so.
func TestInputWithoutReader(t *testing.T) {
	res := plantest.Resource("x", "blob")
	_, err := plan.Input{}.ResourceReader().ReadDocument(context.Background(), nil, &res, 0)
	if !errors.Is(err, errdef.ErrInvalidInput) {
		t.Errorf("got %v", err)
	}
}
